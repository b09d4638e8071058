package fieldpath

import "strings"

// Expand replaces each $(NAME) in s with mapping(NAME) and each $$ with $,
// as the kubelet expands env values, command, args and subPathExpr
// (third_party/forked/golang/expansion); anything else, an unterminated
// "$(" included, is left as written. A mapping that returns "$(NAME)" for
// an unknown NAME leaves the reference as it was.
func Expand(s string, mapping func(name string) string) string {
	if !strings.Contains(s, "$") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '$' || i+1 == len(s) {
			b.WriteByte(s[i])
			continue
		}
		switch s[i+1] {
		case '$':
			b.WriteByte('$')
			i++
		case '(':
			end := strings.IndexByte(s[i+2:], ')')
			if end < 0 {
				b.WriteString("$(")
				i++
				continue
			}
			b.WriteString(mapping(s[i+2 : i+2+end]))
			i += 2 + end
		default:
			b.WriteByte('$')
		}
	}
	return b.String()
}
