package integration

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sdm-hpc/sdm/testkit/testenv"
)

// compare over the ranks of a real program under gdb: a number's extremes
// with their ranks and its mean, a value that is not a number by value,
// an expression a rank cannot evaluate as an error of that rank, and the
// same in --json.
func TestCompareUnderGDB(t *testing.T) {
	testenv.RequireTool(t, "gdb")
	bin := testenv.Examples(t)
	script := []string{"debug", "-n", "4", "--timeout", "60s", "-e", "break compute", "-e", "break special", "-e", "run",
		"-e", "wait", "-e", "compare rank", "-e", "[0-2] compare size - rank * 2", "-e", "compare rank > 1",
		"-e", "compare greeting[0]", "-e", "kill", "--", filepath.Join(bin, "plain")}
	out, stderr, code := run(t, "", script...)
	if code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out, stderr)
	}
	for _, want := range []string{
		"[0-3] rank: 4 values, min 0 (rank 0), max 3 (rank 3), mean 1.5, sd 1.118",
		"[0-2] size - rank * 2: 3 values, min 0 (rank 2), max 4 (rank 0), mean 2, sd 1.633",
		"[0-3] rank > 1: 4 values, min 0 (ranks 0-1), max 1 (ranks 2-3), mean 0.5, sd 0.5",
		"[0-3] greeting[0]: 104 on every rank",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in:\n%s", want, out)
		}
	}
	// In --json; and a name the program lacks, an error of every rank
	// alike (the exit status 1).
	js, stderr, code := run(t, "", "debug", "-n", "4", "--timeout", "60s", "--json", "-e", "break compute", "-e", "break special",
		"-e", "run", "-e", "wait", "-e", "compare rank", "-e", "compare nosuch", "-e", "kill", "--", filepath.Join(bin, "plain"))
	if code != 1 || !strings.Contains(js, `No symbol \"nosuch\" in current context.`) {
		t.Fatalf("--json: exit %d, want 1 for the ranks' errors\n%s%s", code, js, stderr)
	}
	found := false
	for _, line := range strings.Split(js, "\n") {
		var obj struct {
			Command struct{ Op string }
			Groups  []struct {
				Ranks string
				Value struct {
					Numbers struct {
						Count    int
						Min, Max float64
						MaxRanks string `json:"max_ranks"`
					}
				}
			}
		}
		if json.Unmarshal([]byte(line), &obj) == nil && obj.Command.Op == "compare" && len(obj.Groups) == 1 {
			g := obj.Groups[0]
			n := g.Value.Numbers
			found = found || g.Ranks == "0-3" && n.Count == 4 && n.Min == 0 && n.Max == 3 && n.MaxRanks == "3"
		}
	}
	if !found {
		t.Errorf("--json: no compare of ranks 0-3 from 0 to 3:\n%s", js)
	}
}
