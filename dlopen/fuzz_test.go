package dlopen

import (
	"strings"
	"testing"
)

// FuzzParseMatch checks that no list makes ParseMatch panic, that every
// error names the list, and that whatever parses prints back to a list
// that parses to the same patterns and matches the same names.
func FuzzParseMatch(f *testing.F) {
	for _, s := range []string{
		"", "libcuda.so*", "libcuda.so*:libmine.so", " a : b* ", "*", "a::b", "a*b", "/lib/a.so", "lib?.so", "a:\x00", ":",
	} {
		f.Add(s, "libcuda.so.1")
	}
	f.Fuzz(func(t *testing.T, list, library string) {
		m, err := ParseMatch(list)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "dlopen match list ") {
				t.Fatalf("error %q does not name the list", err)
			}
			return
		}
		again, err := ParseMatch(m.String())
		if err != nil {
			t.Fatalf("%q parsed, but its canonical form %q does not: %v", list, m, err)
		}
		if again.String() != m.String() || again.Matches(library) != m.Matches(library) {
			t.Fatalf("%q and its canonical form %q differ", list, m)
		}
		if m.Empty() && m.Matches(library) {
			t.Fatalf("the empty list matched %q", library)
		}
	})
}
