package kubeletflags_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/nodekit-dev/nodekit/kubeletflags"
)

// FuzzAcceptedValue gives every accepted flag the same value: none panics,
// a value is recorded only when accepted, and NormalizeArgs with Parse
// copes with it as an argument too.
func FuzzAcceptedValue(f *testing.F) {
	for _, s := range []string{"", " ", "true", "0x10", "-1", "1h30m", "a=b,c", "a<b", "a:b", `"a,b",c`, `a"b`, "10.0.0.1",
		"k=v:NoSchedule,k-", "0:memory=1Gi,hugepages-2Mi=1Gi;1:memory=2Gi", "0:a:b", "64Ki", "foo*=2,", "v1.37.2", "raw",
		"cpu=200m,pid=-1", "kubernetes.io/hostname=x,bad key", "\x00", "=", ",,,", ";", "--x_y=z", "-"} {
		f.Add(s)
	}
	flags := kubeletflags.Kubelet()
	f.Fuzz(func(t *testing.T, s string) {
		fs := newFlagSet(t)
		accepted := kubeletflags.AcceptRest(fs)
		var ok []string
		for _, fl := range flags {
			if fl.Name == "help" {
				continue
			}
			if fs.Set(fl.Name, s) == nil {
				ok = append(ok, fl.Name)
				assert.Equal(t, s, fs.Lookup(fl.Name).Value.String())
			}
		}
		if len(ok) == 0 {
			ok = []string{}
		}
		assert.Equal(t, ok, accepted.Set())
		args := kubeletflags.NormalizeArgs(fs, []string{s, "--v", s, s})
		_ = fs.Parse(args)
	})
}
