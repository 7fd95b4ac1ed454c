package rm

import "testing"

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

func TestFormatRanks(t *testing.T) {
	for want, in := range map[string][]int{
		"":          nil,
		"3":         {3},
		"0-3,7":     {0, 1, 2, 3, 7},
		"1,3,5-6,9": {1, 3, 5, 6, 9},
	} {
		if got := FormatRanks(in); got != want {
			t.Errorf("FormatRanks(%v) = %q, want %q", in, got, want)
		}
	}
}
