package text

import "testing"

func TestPrintable(t *testing.T) {
	for _, c := range []struct {
		in      string
		escapes bool
		want    string
	}{
		{"mpirun: bad host\x00", false, "mpirun: bad host"},
		{"a\tb\nc\r\n", false, "a\tb\nc\n"},
		{"\x07bell\x7f", true, "bell"},
		{"\x1b[31mred\x1b[0m", true, "\x1b[31mred\x1b[0m"},
		{"\x1b[31mred\x1b[0m", false, "[31mred[0m"},
		{"héllo wörld", false, "héllo wörld"},
		{"", true, ""},
		{"\xff\xfe\x00", true, "\xff\xfe"},
	} {
		if got := Printable(c.in, c.escapes); got != c.want {
			t.Errorf("Printable(%q, %v) = %q, want %q", c.in, c.escapes, got, c.want)
		}
	}
}

func FuzzPrintable(f *testing.F) {
	f.Add("x\x00y", true)
	f.Fuzz(func(t *testing.T, s string, escapes bool) {
		got := Printable(s, escapes)
		for i := 0; i < len(got); i++ {
			if drop(got[i], escapes) {
				t.Fatalf("Printable(%q) = %q keeps %#x", s, got, got[i])
			}
		}
	})
}

func TestShellQuote(t *testing.T) {
	for in, want := range map[string]string{
		"plain/path-1.2": "plain/path-1.2",
		"":               "''",
		"a b":            "'a b'",
		"it's":           `'it'\''s'`,
		"$HOME":          "'$HOME'",
	} {
		if got := ShellQuote(in); got != want {
			t.Errorf("ShellQuote(%q) = %s, want %s", in, got, want)
		}
	}
}
