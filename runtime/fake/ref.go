package fake

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"strings"
)

// normalizeRef turns an image reference into the fully qualified form
// containerd stores and reports ("busybox" -> "docker.io/library/busybox:latest").
// It is the docker reference grammar in small: enough to make short names,
// tags and digests resolve the same way, not a validator.
func normalizeRef(ref string) (string, error) {
	if ref == "" {
		return "", errors.New("invalid reference format")
	}
	name, digest, hasDigest := strings.Cut(ref, "@")
	if hasDigest && !strings.HasPrefix(digest, "sha256:") {
		return "", errors.New("invalid reference format")
	}
	tag := ""
	if i := strings.LastIndexByte(name, ':'); i > strings.LastIndexByte(name, '/') {
		name, tag = name[:i], name[i+1:]
		if tag == "" {
			return "", errors.New("invalid reference format")
		}
	}
	if name == "" || strings.ContainsAny(name, " \t\n") {
		return "", errors.New("invalid reference format")
	}
	domain, rest, ok := strings.Cut(name, "/")
	if !ok || !(strings.ContainsAny(domain, ".:") || domain == "localhost") {
		domain, rest = "docker.io", name
	}
	if domain == "index.docker.io" {
		domain = "docker.io"
	}
	if domain == "docker.io" && !strings.Contains(rest, "/") {
		rest = "library/" + rest
	}
	if rest != strings.ToLower(rest) {
		return "", errors.New("invalid reference format: repository name must be lowercase")
	}
	out := domain + "/" + rest
	switch {
	case hasDigest && tag != "":
		out += ":" + tag + "@" + digest
	case hasDigest:
		out += "@" + digest
	default:
		if tag == "" {
			tag = "latest"
		}
		out += ":" + tag
	}
	return out, nil
}

// imageIDFor derives an image's ID from its normalized reference, so IDs
// are stable across runs and tests can predict them.
func imageIDFor(normalized string) string {
	sum := sha256.Sum256([]byte(normalized))
	return "sha256:" + hex.EncodeToString(sum[:])
}

// imageSize gives each image a plausible, stable, non-zero size (CRI
// requires > 0): 1 to 65 MiB.
func imageSize(id string) uint64 {
	b, _ := hex.DecodeString(strings.TrimPrefix(id, "sha256:")[:8])
	return 1<<20 + uint64(binary.BigEndian.Uint32(b))%(64<<20)
}

// isImageID reports whether s looks like a full image ID.
func isImageID(s string) bool {
	h, ok := strings.CutPrefix(s, "sha256:")
	if !ok || len(h) != 64 {
		return false
	}
	_, err := hex.DecodeString(h)
	return err == nil
}
