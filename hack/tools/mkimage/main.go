// Command mkimage builds a single-layer container image from host files and
// writes it as a docker-archive tarball (the format of `docker save`), which
// `ctr -n k8s.io images import OUT.tar` accepts without any registry. The
// image reference given with -ref is recorded in the archive's manifest.json
// (RepoTags) and survives the import.
//
// Usage:
//
//	mkimage -o OUT.tar -ref NAME:TAG \
//	    -file SRC:DST[:MODE] [-file ...] \
//	    [-entrypoint "ARG ..."] [-cmd "ARG ..."] \
//	    [-symlink DST=TARGET ...] [-dir DST[:MODE] ...] \
//	    [-env K=V ...] [-label K=V ...] [-workdir DIR] [-user USER]
//
// The layer contains a minimal skeleton (/dev /proc /sys /etc /tmp (mode 1777),
// /etc/passwd, /etc/group) plus the given files. MODE is octal; without it the
// host file's permission bits are used (so `go build` output stays 0755).
// -symlink adds a symbolic link DST pointing at TARGET (a busybox applet, or
// /usr/bin=/bin); -dir adds an empty directory (mode 0755 unless given).
// Every entry is owned by 0:0 and stamped with the Unix epoch, and the config
// has created=epoch, so the same inputs always give a byte-identical archive
// and therefore the same image ID (the config digest). The layer is stored
// uncompressed, so its digest equals its diff ID.
//
// -entrypoint and -cmd are split on whitespace. The image environment always
// starts with a standard PATH; -env adds to (or overrides) it.
//
// On success mkimage prints one line to stdout:
//
//	OUT REF id=sha256:<config digest> manifest=sha256:<manifest digest> layer=<bytes>B
package main

import (
	"archive/tar"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

const defaultPath = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// epoch is the timestamp of every layer entry and of the image config.
var epoch = time.Unix(0, 0).UTC()

type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

// fileSpec is one parsed -file flag.
type fileSpec struct {
	src, dst string // dst: path inside the image, no leading slash
	mode     int64  // -1: take it from the host file
}

func parseFileSpec(s string) (fileSpec, error) {
	parts := strings.Split(s, ":")
	if len(parts) < 2 || len(parts) > 3 || parts[0] == "" || parts[1] == "" {
		return fileSpec{}, fmt.Errorf("bad -file %q, want SRC:DST[:MODE]", s)
	}
	spec := fileSpec{src: parts[0], dst: strings.Trim(path.Clean("/"+parts[1]), "/"), mode: -1}
	if spec.dst == "" {
		return fileSpec{}, fmt.Errorf("bad -file %q: DST must name a file", s)
	}
	if len(parts) == 3 {
		m, err := strconv.ParseUint(parts[2], 8, 32)
		if err != nil || m > 0o7777 {
			return fileSpec{}, fmt.Errorf("bad -file %q: MODE must be octal permission bits like 0755", s)
		}
		spec.mode = int64(m)
	}
	return spec, nil
}

func parseKV(flagName string, vals []string) (map[string]string, []string, error) {
	m := map[string]string{}
	var order []string
	for _, v := range vals {
		k, val, ok := strings.Cut(v, "=")
		if !ok || k == "" {
			return nil, nil, fmt.Errorf("bad -%s %q, want K=V", flagName, v)
		}
		if _, dup := m[k]; !dup {
			order = append(order, k)
		}
		m[k] = val
	}
	return m, order, nil
}

// layerEntry is one tar entry of the image layer.
type layerEntry struct {
	name string // no leading slash; directories end in "/"
	typ  byte
	mode int64
	data []byte
	link string // a symlink's target
}

// linkSpec is one parsed -symlink flag; dirSpec one -dir flag.
type linkSpec struct{ dst, target string }
type dirSpec struct {
	dst  string
	mode int64
}

func parseLinkSpec(s string) (linkSpec, error) {
	dst, target, ok := strings.Cut(s, "=")
	dst = strings.Trim(path.Clean("/"+dst), "/")
	if !ok || dst == "" || target == "" {
		return linkSpec{}, fmt.Errorf("bad -symlink %q, want DST=TARGET", s)
	}
	return linkSpec{dst: dst, target: target}, nil
}

func parseDirSpec(s string) (dirSpec, error) {
	p, m, hasMode := strings.Cut(s, ":")
	d := dirSpec{dst: strings.Trim(path.Clean("/"+p), "/"), mode: 0o755}
	if d.dst == "" {
		return dirSpec{}, fmt.Errorf("bad -dir %q: want DST[:MODE] below /", s)
	}
	if hasMode {
		v, err := strconv.ParseUint(m, 8, 32)
		if err != nil || v > 0o7777 {
			return dirSpec{}, fmt.Errorf("bad -dir %q: MODE must be octal permission bits like 0755", s)
		}
		d.mode = int64(v)
	}
	return d, nil
}

// buildLayer returns an uncompressed, deterministic tar of the skeleton plus files.
func buildLayer(files []fileSpec, links []linkSpec, extraDirs []dirSpec) ([]byte, error) {
	var ents []layerEntry
	dirs := map[string]bool{}
	addDir := func(p string, mode int64) {
		p = strings.Trim(path.Clean("/"+p), "/")
		if p == "" || p == "." {
			return
		}
		parts := strings.Split(p, "/")
		for i := 1; i <= len(parts); i++ {
			d := strings.Join(parts[:i], "/")
			if dirs[d] {
				continue
			}
			dirs[d] = true
			m := int64(0o755)
			if i == len(parts) {
				m = mode
			}
			ents = append(ents, layerEntry{name: d + "/", typ: tar.TypeDir, mode: m})
		}
	}
	// Skeleton: mount points for the runtime and a world-writable /tmp.
	for _, d := range []string{"dev", "proc", "sys", "etc"} {
		addDir(d, 0o755)
	}
	addDir("tmp", 0o1777)
	seenFiles := map[string]bool{}
	addFile := func(name string, mode int64, data []byte) error {
		if dirs[name] {
			return fmt.Errorf("%s: a directory of the same name is already in the image", name)
		}
		if seenFiles[name] {
			// Later -file flags replace earlier entries (and the skeleton files).
			for i := range ents {
				if ents[i].name == name {
					ents[i].mode, ents[i].data = mode, data
				}
			}
			return nil
		}
		addDir(path.Dir(name), 0o755)
		seenFiles[name] = true
		ents = append(ents, layerEntry{name: name, typ: tar.TypeReg, mode: mode, data: data})
		return nil
	}
	_ = addFile("etc/passwd", 0o644, []byte("root:x:0:0:root:/:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n"))
	_ = addFile("etc/group", 0o644, []byte("root:x:0:\nnogroup:x:65534:\n"))
	for _, f := range files {
		st, err := os.Stat(f.src)
		if err != nil {
			return nil, err
		}
		if !st.Mode().IsRegular() {
			return nil, fmt.Errorf("%s: not a regular file", f.src)
		}
		data, err := os.ReadFile(f.src)
		if err != nil {
			return nil, err
		}
		mode := f.mode
		if mode < 0 {
			mode = int64(st.Mode().Perm())
			if st.Mode()&fs.ModeSetuid != 0 {
				mode |= 0o4000
			}
			if st.Mode()&fs.ModeSetgid != 0 {
				mode |= 0o2000
			}
			if st.Mode()&fs.ModeSticky != 0 {
				mode |= 0o1000
			}
		}
		if err := addFile(f.dst, mode, data); err != nil {
			return nil, err
		}
	}

	for _, d := range extraDirs {
		if seenFiles[d.dst] {
			return nil, fmt.Errorf("-dir %s: a file of the same name is already in the image", d.dst)
		}
		addDir(d.dst, d.mode)
	}
	for _, l := range links {
		if dirs[l.dst] || seenFiles[l.dst] {
			return nil, fmt.Errorf("-symlink %s: already in the image", l.dst)
		}
		addDir(path.Dir(l.dst), 0o755)
		seenFiles[l.dst] = true
		ents = append(ents, layerEntry{name: l.dst, typ: tar.TypeSymlink, mode: 0o777, link: l.target})
	}

	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range ents {
		h := &tar.Header{
			Name:     e.name,
			Typeflag: e.typ,
			Mode:     e.mode,
			Linkname: e.link,
			ModTime:  epoch,
			Format:   tar.FormatPAX, // long names; no extra records for these fields
		}
		if e.typ == tar.TypeReg {
			h.Size = int64(len(e.data))
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if e.typ == tar.TypeReg {
			if _, err := tw.Write(e.data); err != nil {
				return nil, err
			}
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

type options struct {
	out, ref, entrypoint, cmd, workdir, user, arch string
	files, links, dirs, envs, labels               []string
}

func buildImage(o options) (v1.Image, name.Tag, error) {
	tag, err := name.NewTag(o.ref)
	if err != nil {
		return nil, name.Tag{}, fmt.Errorf("bad -ref %q: %w", o.ref, err)
	}
	var specs []fileSpec
	for _, f := range o.files {
		s, err := parseFileSpec(f)
		if err != nil {
			return nil, name.Tag{}, err
		}
		specs = append(specs, s)
	}
	var links []linkSpec
	for _, l := range o.links {
		s, err := parseLinkSpec(l)
		if err != nil {
			return nil, name.Tag{}, err
		}
		links = append(links, s)
	}
	var dirs []dirSpec
	for _, d := range o.dirs {
		s, err := parseDirSpec(d)
		if err != nil {
			return nil, name.Tag{}, err
		}
		dirs = append(dirs, s)
	}
	envMap, envOrder, err := parseKV("env", o.envs)
	if err != nil {
		return nil, name.Tag{}, err
	}
	labels, _, err := parseKV("label", o.labels)
	if err != nil {
		return nil, name.Tag{}, err
	}
	layerBytes, err := buildLayer(specs, links, dirs)
	if err != nil {
		return nil, name.Tag{}, err
	}

	layer := static.NewLayer(layerBytes, types.DockerUncompressedLayer)
	img, err := mutate.Append(empty.Image, mutate.Addendum{
		Layer:   layer,
		History: v1.History{Created: v1.Time{Time: epoch}, CreatedBy: "nodekit hack/tools/mkimage"},
	})
	if err != nil {
		return nil, name.Tag{}, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, name.Tag{}, err
	}
	cf = cf.DeepCopy()
	cf.Architecture = o.arch
	cf.OS = "linux"
	cf.Created = v1.Time{Time: epoch}
	env := []string{defaultPath}
	for _, k := range envOrder {
		if k == "PATH" {
			env[0] = "PATH=" + envMap[k]
			continue
		}
		env = append(env, k+"="+envMap[k])
	}
	cf.Config.Env = env
	cf.Config.Entrypoint = strings.Fields(o.entrypoint)
	cf.Config.Cmd = strings.Fields(o.cmd)
	cf.Config.WorkingDir = o.workdir
	cf.Config.User = o.user
	if len(labels) > 0 {
		cf.Config.Labels = labels
	}
	img, err = mutate.ConfigFile(img, cf)
	if err != nil {
		return nil, name.Tag{}, err
	}
	return img, tag, nil
}

func run(args []string) error {
	fset := flag.NewFlagSet("mkimage", flag.ContinueOnError)
	var o options
	var files, links, dirs, envs, labels multiFlag
	fset.StringVar(&o.out, "o", "", "output archive path (required)")
	fset.StringVar(&o.ref, "ref", "", "image reference NAME:TAG, e.g. nodekit.local/testbin:1 (required)")
	fset.StringVar(&o.entrypoint, "entrypoint", "", "entrypoint, split on whitespace")
	fset.StringVar(&o.cmd, "cmd", "", "default command (args), split on whitespace")
	fset.StringVar(&o.workdir, "workdir", "/", "working directory")
	fset.StringVar(&o.user, "user", "", "user (e.g. 0 or 65534); empty means root")
	fset.StringVar(&o.arch, "arch", runtime.GOARCH, "image architecture")
	fset.Var(&files, "file", "SRC:DST[:MODE] host file to copy into the image (repeatable)")
	fset.Var(&links, "symlink", "DST=TARGET symbolic link in the image (repeatable)")
	fset.Var(&dirs, "dir", "DST[:MODE] empty directory in the image (repeatable)")
	fset.Var(&envs, "env", "K=V image environment variable (repeatable)")
	fset.Var(&labels, "label", "K=V image label (repeatable)")
	if err := fset.Parse(args); err != nil {
		return err
	}
	if fset.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fset.Args())
	}
	if o.out == "" || o.ref == "" {
		return errors.New("-o and -ref are required")
	}
	o.files, o.links, o.dirs, o.envs, o.labels = files, links, dirs, envs, labels

	img, tag, err := buildImage(o)
	if err != nil {
		return err
	}
	// Write next to the target and rename, so a concurrent reader never sees a
	// partial archive.
	tmp, err := os.CreateTemp(filepath.Dir(o.out), ".mkimage-*.tar")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if err := tarball.Write(tag, img, tmp); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), o.out); err != nil {
		return err
	}

	id, err := img.ConfigName()
	if err != nil {
		return err
	}
	mdig, err := img.Digest()
	if err != nil {
		return err
	}
	layers, err := img.Layers()
	if err != nil {
		return err
	}
	lsz, err := layers[0].Size()
	if err != nil {
		return err
	}
	fmt.Printf("%s %s id=%s manifest=%s layer=%dB\n", o.out, o.ref, id, mdig, lsz)
	return nil
}

func main() {
	if err := run(os.Args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(2)
		}
		fmt.Fprintf(os.Stderr, "mkimage: %v\n", err)
		os.Exit(1)
	}
}
