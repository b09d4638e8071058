package userns

import (
	"errors"
	"os"
	"os/user"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSubIDsRange(t *testing.T) {
	const none = "\x00" // no such file
	known := func(string) (string, error) { return "998", nil }
	unknown := func(n string) (string, error) { return "", user.UnknownUserError(n) }
	for _, tc := range []struct {
		name           string
		lookup         func(string) (string, error)
		subuid, subgid string
		wantFirst      uint32
		wantLen        uint32
		wantErr        string
	}{
		{name: "no kubelet user: the default", lookup: unknown, subuid: "kubelet:65536:131072\n", subgid: "kubelet:65536:131072\n",
			wantFirst: 65536, wantLen: 1<<32 - 65536},
		{name: "neither file: the default", lookup: known, subuid: none, subgid: none, wantFirst: 65536, wantLen: 1<<32 - 65536},
		{name: "the kubelet's range", lookup: known,
			subuid:    "root:100000:65536\nkubelet:2147483648:2147483648\n",
			subgid:    "# comment\nkubelet:2147483648:2147483648\n",
			wantFirst: 1 << 31, wantLen: 1 << 31},
		{name: "by numeric uid", lookup: known, subuid: "998:65536:7208960\n", subgid: "kubelet:65536:7208960\n",
			wantFirst: 65536, wantLen: 7208960},
		{name: "no line for the user", lookup: known, subuid: "root:100000:65536\n", subgid: "kubelet:65536:65536\n",
			wantErr: `error retrieving additional uids for user "kubelet": `},
		{name: "subgid missing", lookup: known, subuid: "kubelet:65536:65536\n", subgid: none,
			wantErr: `error retrieving additional gids for user "kubelet": `},
		{name: "two lines", lookup: known, subuid: "kubelet:65536:65536\nkubelet:131072:65536\n", subgid: "kubelet:65536:65536\n",
			wantErr: "it must contain only one"},
		{name: "mismatch", lookup: known, subuid: "kubelet:65536:65536\n", subgid: "kubelet:131072:65536\n",
			wantErr: `mismatched subuids and subgids for user "kubelet"`},
		{name: "bad number", lookup: known, subuid: "kubelet:x:65536\n", subgid: "kubelet:65536:65536\n",
			wantErr: "invalid line"},
		{name: "lookup fails", lookup: func(string) (string, error) { return "", errors.New("nss down") },
			wantErr: `looking up user "kubelet": nss down`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			s := SubIDs{LookupUser: tc.lookup, SubUIDFile: filepath.Join(dir, "subuid"), SubGIDFile: filepath.Join(dir, "subgid")}
			for file, content := range map[string]string{s.SubUIDFile: tc.subuid, s.SubGIDFile: tc.subgid} {
				if content != none {
					require.NoError(t, os.WriteFile(file, []byte(content), 0o644))
				}
			}
			first, length, err := s.Range(65536)
			if tc.wantErr != "" {
				assert.ErrorContains(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.wantFirst, first)
			assert.Equal(t, tc.wantLen, length)
		})
	}
}
