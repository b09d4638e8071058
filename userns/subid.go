package userns

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/user"
	"strconv"
	"strings"
)

// DefaultUser is the user whose subordinate IDs are the pods' range, as
// the kubelet's.
const DefaultUser = "kubelet"

// SubIDs finds the range of host IDs the pods' user namespaces come from,
// as the kubelet's getKubeletMappings: the one range /etc/subuid gives
// User, which /etc/subgid must give identically.
type SubIDs struct {
	// User is the user whose ranges are read (default "kubelet").
	User string
	// SubUIDFile and SubGIDFile default to /etc/subuid and /etc/subgid.
	SubUIDFile, SubGIDFile string
	// LookupUser returns the numeric user ID of a user name (default
	// os/user.Lookup's: NSS in a cgo build, /etc/passwd alone in a static
	// one); an error wrapping user.UnknownUserError means no such user.
	LookupUser func(name string) (uid string, err error)
}

// Range returns the first ID and the length of the pods' range for pods
// of idsPerPod IDs each. Without User, or when neither file exists, it is
// the kubelet's default: idsPerPod up to 2^32-1. User with no line, or
// more than one, in either file, or different ranges in the two, is an
// error, as the kubelet refuses to start then.
func (s SubIDs) Range(idsPerPod uint32) (first, length uint32, err error) {
	name := s.User
	if name == "" {
		name = DefaultUser
	}
	lookup := s.LookupUser
	if lookup == nil {
		lookup = func(n string) (string, error) {
			u, err := user.Lookup(n)
			if err != nil {
				return "", err
			}
			return u.Uid, nil
		}
	}
	defFirst, defLen := idsPerPod, uint32(1<<32-uint64(idsPerPod))
	uid, err := lookup(name)
	if err != nil {
		var unknown user.UnknownUserError
		if errors.As(err, &unknown) {
			return defFirst, defLen, nil
		}
		return 0, 0, fmt.Errorf("looking up user %q: %w", name, err)
	}
	uidFile, gidFile := or(s.SubUIDFile, "/etc/subuid"), or(s.SubGIDFile, "/etc/subgid")
	uids, uerr := readSubIDs(uidFile, name, uid)
	gids, gerr := readSubIDs(gidFile, name, uid)
	if errors.Is(uerr, fs.ErrNotExist) && errors.Is(gerr, fs.ErrNotExist) {
		return defFirst, defLen, nil
	}
	if uerr != nil {
		return 0, 0, fmt.Errorf("error retrieving additional uids for user %q: %w", name, uerr)
	}
	if gerr != nil {
		return 0, 0, fmt.Errorf("error retrieving additional gids for user %q: %w", name, gerr)
	}
	if uids != gids {
		return 0, 0, fmt.Errorf("mismatched subuids and subgids for user %q: %s has %d+%d, %s has %d+%d",
			name, uidFile, uids[0], uids[1], gidFile, gids[0], gids[1])
	}
	return uids[0], uids[1], nil
}

// readSubIDs returns the start and count of the one line of file (format
// name:start:count, the owner named or numeric) for user name or uid.
func readSubIDs(file, name, uid string) ([2]uint32, error) {
	f, err := os.Open(file)
	if err != nil {
		return [2]uint32{}, err
	}
	defer f.Close()
	var found [][2]uint32
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		parts := strings.Split(line, ":")
		if len(parts) != 3 || (parts[0] != name && parts[0] != uid) {
			continue
		}
		start, err := strconv.ParseUint(parts[1], 10, 32)
		if err != nil {
			return [2]uint32{}, fmt.Errorf("%s:%d: invalid line %q: %w", file, n, line, err)
		}
		count, err := strconv.ParseUint(parts[2], 10, 32)
		if err != nil {
			return [2]uint32{}, fmt.Errorf("%s:%d: invalid line %q: %w", file, n, line, err)
		}
		found = append(found, [2]uint32{uint32(start), uint32(count)})
	}
	if err := sc.Err(); err != nil {
		return [2]uint32{}, fmt.Errorf("%s: %w", file, err)
	}
	switch len(found) {
	case 0:
		return [2]uint32{}, fmt.Errorf("%s: no range for user %q", file, name)
	case 1:
		return found[0], nil
	}
	return [2]uint32{}, fmt.Errorf("%s: %d ranges for user %q: it must contain only one", file, len(found), name)
}

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
