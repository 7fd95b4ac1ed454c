package console

import (
	"strings"
	"testing"

	"github.com/sdm-hpc/sdm/wire"
)

func TestIsName(t *testing.T) {
	for s, want := range map[string]bool{"workers": true, "w-1_b": true, "_x": true, "1w": false, "": false, "a b": false, "0-3": false} {
		if isName(s) != want {
			t.Errorf("isName(%q) = %v", s, !want)
		}
	}
}

func TestCompleteCommands(t *testing.T) {
	c := &Console{}
	got := strings.Join(c.Complete("wa"), "|")
	if got != "wait |watch " {
		t.Fatalf("Complete(wa) = %q", got)
	}
	if got := strings.Join(c.Complete("[0-3] st"), "|"); got != "[0-3] stacks |[0-3] status |[0-3] step " {
		t.Fatalf("Complete([0-3] st) = %q", got)
	}
	if got := c.Complete("print x"); got != nil {
		t.Fatalf("arguments completed: %v", got)
	}
}

func TestCompleteSetNames(t *testing.T) {
	c := &Console{sets: map[string]wire.RankSet{"workers": wire.Range(1, 3), "writers": wire.Single(0)}}
	if got := strings.Join(c.Complete("[0,w"), "|"); got != "[0,workers|[0,writers" {
		t.Fatalf("Complete([0,w) = %q", got)
	}
}

func TestIsCommand(t *testing.T) {
	for line, want := range map[string]bool{
		"print x": true, "p x": true, "[0-3] stacks": true, "  where": true, "[1": true,
		"y + 1": false, "pri x": false, "rank * 10": false, "": false, "[0-3] rank": false,
	} {
		if got := IsCommand(line); got != want {
			t.Errorf("IsCommand(%q) = %v, want %v", line, got, want)
		}
	}
}
