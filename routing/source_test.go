package routing

import "testing"

func TestParseSource(t *testing.T) {
	for _, s := range []Source{SourceFile, SourcePublish, SourceSLURM, SourcePE} {
		if got, err := ParseSource(string(s)); got != s || err != nil {
			t.Errorf("%s: %q %v", s, got, err)
		}
		if s.Computed() != (s == SourceSLURM || s == SourcePE) {
			t.Errorf("%s: Computed %v", s, s.Computed())
		}
	}
	if _, err := ParseSource("FILE"); err == nil || err.Error() != "--routes_from=FILE: want file, publish, slurm or pe" {
		t.Errorf("FILE: %v", err)
	}
}
