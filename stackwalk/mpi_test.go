package stackwalk

import (
	"fmt"
	"strings"
	"testing"

	"github.com/sdm-hpc/sdm/testkit/testenv"
)

// The ranks of a 2-rank job of testdata/mpi.c, each blocked in pause().
func mpiRanks(t *testing.T, mpicc string, starter ...string) []int {
	t.Helper()
	bin := build(t, mpicc, "mpi.c", "-g", "-O2")
	p := startProgram(t, "", starter[0], append(starter[1:], bin)...)
	var pids []int
	for range 2 {
		var rank, pid int
		line := p.waitLine(t, "ready")
		if _, err := fmt.Sscanf(line, "ready %d %d", &rank, &pid); err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		pids = append(pids, pid)
	}
	return pids
}

func checkRanks(t *testing.T, pids []int) {
	s := NewSampler()
	defer s.Close()
	for _, pid := range pids {
		waitBlocked(t, pid)
		snap := agreeWithEuStack(t, s, pid)
		if names := strings.Join(functions(snap.Threads[0]), " "); !strings.Contains(names, "pause hold main") {
			t.Errorf("rank %d's main thread: %s, want pause hold main", pid, names)
		}
		if len(snap.Threads) < 2 {
			t.Errorf("rank %d: %d threads, want the MPI library's too:\n%s", pid, len(snap.Threads), format(snap))
		}
	}
}

func TestAgreesWithEuStackOpenMPI(t *testing.T) {
	mpirun := testenv.RequireTool(t, "mpirun.openmpi", "mpirun")
	checkRanks(t, mpiRanks(t, "mpicc", mpirun, "--allow-run-as-root", "--oversubscribe", "-np", "2"))
}

func TestAgreesWithEuStackMPICH(t *testing.T) {
	mpiexec := testenv.RequireTool(t, "mpiexec.hydra")
	checkRanks(t, mpiRanks(t, "mpicc.mpich", mpiexec, "-n", "2"))
}
