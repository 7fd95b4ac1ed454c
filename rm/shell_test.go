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
