package podpath

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

const (
	// MaxElementLen is the longest file name Linux file systems take
	// (NAME_MAX); a longer element fails with "file name too long".
	MaxElementLen = 255
	// MaxUIDLen bounds metadata.uid. UIDs in use are 36 characters (UUIDs)
	// or 32 (the kubelet's hex digests); the bound leaves room for
	// hand-written ones and keeps <namespace>_<name>_<uid> and
	// "pod<uid>.slice" within MaxElementLen for ordinary names.
	MaxUIDLen = 128
)

const uidFmt = "[A-Za-z0-9]([-A-Za-z0-9]*[A-Za-z0-9])?"

var uidRegexp = regexp.MustCompile("^" + uidFmt + "$")

// ValidateUID returns what is wrong with uid as a pod UID a node agent puts
// in paths and cgroup names (nil when nothing is), in the style of
// k8s.io/apimachinery's validation.IsDNS1123Label.
func ValidateUID(uid string) []string {
	if uid == "" {
		return []string{"must not be empty"}
	}
	if len(uid) > MaxUIDLen {
		return []string{validation.MaxLenError(MaxUIDLen)}
	}
	if !uidRegexp.MatchString(uid) {
		return []string{validation.RegexError("a pod UID must consist of ASCII letters, digits and '-', "+
			"and must start and end with a letter or digit", uidFmt, "3f1f2a5e-8b0c-4a8e-9d3e-0c1e5b7a9f21")}
	}
	return nil
}

// ValidateElement returns what is wrong with s as one element of a path
// below a base directory (nil when nothing is).
func ValidateElement(s string) []string {
	switch {
	case s == "":
		return []string{"must not be empty"}
	case s == "." || s == "..":
		return []string{`must not be "." or ".."`}
	case strings.ContainsRune(s, '/'):
		return []string{"must be a single path element: must not contain '/'"}
	case strings.IndexByte(s, 0) >= 0:
		return []string{"must not contain a NUL byte"}
	case len(s) > MaxElementLen:
		return []string{fmt.Sprintf("must be no more than %d bytes (a file name's limit)", MaxElementLen)}
	}
	return nil
}

// Join returns base with elems appended, each a single path element
// (ValidateElement); it refuses anything else, so the result is always
// below base.
func Join(base string, elems ...string) (string, error) {
	if base == "" {
		return "", errors.New("podpath: empty base directory")
	}
	for _, e := range elems {
		if msgs := ValidateElement(e); len(msgs) > 0 {
			return "", fmt.Errorf("podpath: path element %s under %s: %s", Quote(e), base, msgs[0])
		}
	}
	return filepath.Join(append([]string{base}, elems...)...), nil
}

// JoinLocal returns base joined with rel, a relative path of one or more
// elements that stays below base (filepath.IsLocal): no leading '/', no
// ".." that climbs out, no NUL byte, no element over MaxElementLen bytes.
func JoinLocal(base, rel string) (string, error) {
	if base == "" {
		return "", errors.New("podpath: empty base directory")
	}
	if msg := checkLocal(rel); msg != "" {
		return "", fmt.Errorf("podpath: path %s under %s: %s", Quote(rel), base, msg)
	}
	return filepath.Join(base, rel), nil
}

func checkLocal(rel string) string {
	if strings.IndexByte(rel, 0) >= 0 {
		return "must not contain a NUL byte"
	}
	if !filepath.IsLocal(rel) {
		return "must be a relative path that stays below its base (no leading '/', no '..' climbing out)"
	}
	for _, e := range strings.Split(rel, "/") {
		if len(e) > MaxElementLen {
			return fmt.Sprintf("each element must be no more than %d bytes (a file name's limit)", MaxElementLen)
		}
	}
	return ""
}

// MkdirAllIn creates rel and its parents below base (created first with
// os.MkdirAll if missing: base is the caller's, trusted) through os.Root,
// so a symlink below base cannot lead the creation outside it. It returns
// the directory's path.
func MkdirAllIn(base, rel string, perm os.FileMode) (string, error) {
	p, err := JoinLocal(base, rel)
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(base, 0o755); err != nil {
		return "", err
	}
	root, err := os.OpenRoot(base)
	if err != nil {
		return "", err
	}
	defer root.Close()
	if err := root.MkdirAll(rel, perm); err != nil {
		return "", err
	}
	return p, nil
}

// RemoveAllIn removes rel and everything below it, below base, through
// os.Root (symlinks are removed, never followed out of base). rel must name
// something strictly below base: "." and "" are refused. A missing base or
// rel is not an error.
func RemoveAllIn(base, rel string) error {
	if filepath.Clean(rel) == "." {
		return fmt.Errorf("podpath: refusing to remove %s itself (path %s)", base, Quote(rel))
	}
	if _, err := JoinLocal(base, rel); err != nil {
		return err
	}
	root, err := os.OpenRoot(base)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer root.Close()
	return root.RemoveAll(rel)
}

// Quote quotes s for an error message, cut to its first 64 bytes when
// longer (a 2,000-byte UID need not be repeated whole to be recognized).
func Quote(s string) string {
	const keep = 64
	if len(s) <= keep+16 {
		return fmt.Sprintf("%q", s)
	}
	return fmt.Sprintf("%q... (%d bytes)", s[:keep], len(s))
}
