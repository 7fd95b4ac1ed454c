package integration

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/sdm-hpc/sdm/testkit/testenv"
	"github.com/sdm-hpc/sdm/wire"
)

// Under --mpir the ranks' output reaches sdm through the starter, which is
// asked to label each line with its rank: the lines print with their
// ranks, and the same line of several ranks merges, as in every other mode.
func TestMPIROutputHasRanks(t *testing.T) {
	bin := testenv.Examples(t)
	testenv.RequireTool(t, "gdb")
	ring := filepath.Join(bin, "ring")
	for _, tc := range []struct {
		rm    string
		args  []string
		label string
	}{
		{"openmpi", []string{"--rm", "auto", "--launcher-arg=--oversubscribe"}, "--tag-output"},
		{"slurm", []string{"--rm", "slurm"}, "--label"}, // srun --mpi=pmix is added, and said
	} {
		t.Run(tc.rm, func(t *testing.T) {
			adapter{rm: tc.rm}.prepare(t)
			args := append(append([]string{"debug", "--mpir", "-n", "4", "--timeout", "60s"}, tc.args...),
				"-e", "continue", "-e", "wait", "--", ring)
			out, stderr, code := run(t, "", args...)
			if code != 0 || !strings.Contains(stderr, " "+tc.label+" "+ring+"\n") {
				t.Fatalf("exit %d, or no %s in the starter's command\n%s\n%s", code, tc.label, out, stderr)
			}
			if !strings.Contains(out, "\n[0] token after 3 rounds: 18\n") {
				t.Errorf("rank 0's line without its rank")
			}
			lines := 0
			for _, line := range strings.Split(out, "\n") {
				if strings.Contains(line, "ring of 4 ranks done") {
					lines++
				}
			}
			if got := ranksWith(out, "ring of 4 ranks done"); !got.Equal(wire.All(4)) || lines > 2 {
				t.Errorf("ring of 4 ranks done: ranks %v on %d lines, want all on one or two (rank 0 prints a line before)", got, lines)
			}
			if t.Failed() {
				t.Logf("output:\n%s\nstderr:\n%s", out, stderr)
			}
		})
	}
	// A starter of its own labels nothing: its lines print as they are.
	t.Run("own starter", func(t *testing.T) {
		out, stderr, code := run(t, "", "debug", "--mpir", "--starter", "-e", "continue", "-e", "wait", "--", filepath.Join(bin, "mpir-starter"), "-n", "2")
		if code != 0 || !strings.Contains(out, "\nrank 1 of 2: ") || !strings.Contains(out, "mpir-starter: started 2 ranks\n") {
			t.Errorf("exit %d\n%s\n%s", code, out, stderr)
		}
	})
}
