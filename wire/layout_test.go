package wire

import (
	"strings"
	"testing"
)

func TestParseLayout(t *testing.T) {
	l, err := ParseLayout("0-2,6:3-5:7")
	if err != nil {
		t.Fatal(err)
	}
	if len(l) != 3 || l.String() != "0-2,6:3-5:7" || l.Size(3) != 8 || !l.Ranks(1).Equal(Range(3, 5)) {
		t.Fatalf("layout %v (size %d)", l, l.Size(3))
	}
	var none Layout
	if none.Size(4) != 4 || !none.Ranks(2).Equal(Single(2)) || none.String() != "" {
		t.Fatalf("nil layout: size %d, ranks of 2 %v, %q", none.Size(4), none.Ranks(2), none.String())
	}
	for text, want := range map[string]string{
		"0-2::3":  "server 1",
		"0-2:2-3": "served twice",
		"0-1:3":   "ranks 2 are missing",
		"0-1:x":   "server 1",
		"1:2":     "ranks 0 are missing",
	} {
		if _, err := ParseLayout(text); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseLayout(%q): %v, want an error saying %q", text, err, want)
		}
	}
}

// A layout read from a flag either is one that every node can serve, or
// is refused; it never panics.
func FuzzParseLayout(f *testing.F) {
	for _, seed := range []string{"0-3:4-7", "0,2:1,3", "", ":", "0-2::3", "5-1", "0-999999999", "0:0", "-1"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, text string) {
		l, err := ParseLayout(text)
		if err != nil {
			return
		}
		if err := l.Verify(); err != nil {
			t.Fatalf("%q parsed into %v, which Verify refuses: %v", text, l, err)
		}
		again, err := ParseLayout(l.String())
		if err != nil || again.String() != l.String() {
			t.Fatalf("%q: %v does not read back: %v, %v", text, l, again, err)
		}
	})
}
