package fieldpath_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/nodekit-dev/nodekit/fieldpath"
)

// TestExpand pins the kubelet's expansion (its forked expansion package's
// tests): $(VAR) mapped, $$ an escaped $, everything else as written.
func TestExpand(t *testing.T) {
	vars := map[string]string{"A": "a", "B": "b", "EMPTY": ""}
	mapping := func(name string) string {
		if v, ok := vars[name]; ok {
			return v
		}
		return "$(" + name + ")"
	}
	for _, tc := range []struct{ in, want string }{
		{"plain", "plain"},
		{"$(A)", "a"},
		{"x$(A)y$(B)z", "xaybz"},
		{"$(EMPTY)", ""},
		{"$(UNKNOWN)", "$(UNKNOWN)"},
		{"$$(A)", "$(A)"},
		{"$$$(A)", "$a"},
		{"$$$$(A)", "$$(A)"},
		{"$(A", "$(A"},
		{"$(A$(B)", "$(A$(B)"},
		{"$A", "$A"},
		{"$", "$"},
		{"a$", "a$"},
		{"$()", "$()"},
		{"$(A)$(", "a$("},
	} {
		assert.Equal(t, tc.want, fieldpath.Expand(tc.in, mapping), tc.in)
	}
}
