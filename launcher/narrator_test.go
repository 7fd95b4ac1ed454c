package launcher

import (
	"bytes"
	"log"
	"testing"
)

// The starter is told only when asked or when the adapter was said; the
// counting steps stay off a log that is not a terminal.
func TestNarratorTellsTheStepsOfItsOwn(t *testing.T) {
	var out bytes.Buffer
	n := &Narrator{ProgressLine: NewProgressLine(&out, false), Log: log.New(&out, "sdm: ", 0)}
	n.Step(Progress{Stage: StageUsing, Text: "openmpi (mpirun)"})
	n.Step(Progress{Stage: StageStarting, Text: "mpirun -np 2 ./ring"})
	n.Step(Progress{Stage: StageConnected, Done: 1, Total: 2})
	n.Step(Progress{Stage: StageAcquired, Text: "2 ranks"})
	if want := "sdm: acquired 2 ranks\n"; out.String() != want {
		t.Errorf("told %q, want %q", out.String(), want)
	}
	out.Reset()
	n.Step(Progress{Stage: StageUsing, Text: "openmpi (mpirun)", Why: "ring links Open MPI"})
	n.Step(Progress{Stage: StageStarting, Text: "mpirun -np 2 ./ring"})
	if want := "sdm: using openmpi (mpirun)\nsdm: starting mpirun -np 2 ./ring\n"; out.String() != want {
		t.Errorf("told %q, want %q", out.String(), want)
	}
}
