package integration

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sdm-hpc/sdm/mpiq"
	"github.com/sdm-hpc/sdm/stackwalk"
	"github.com/sdm-hpc/sdm/testkit/testenv"
)

// A job that sdm attached to has no interposition library: its queues
// are read through Open MPI's own message-queue library (MPIR_dll_name),
// with the types sdm's build made from the development headers of the
// installed libmpi. examples/pending hung under mpirun, attached to by
// its pid: queues lists what Open MPI holds posted (peers as world ranks
// through a communicator of two), and deadlock, and sdm stacks --pid
// --deadlock, complete it with the call each rank's stack is in and find
// the cycle; a ring of sends too big to be buffered is one cycle of
// sends to rank+1. The job is left running, untraced. Where the build
// has no types for this libmpi (Debian 13's Open MPI 5 headers do not
// compile), each rank says so and deadlock reads the stacks alone.
func TestQueuesThroughTheMPIsLibrary(t *testing.T) {
	testenv.RequireTool(t, "gdb")
	mpirun := testenv.RequireTool(t, "mpirun.openmpi", "mpirun")
	typed := libmpiTyped(t)
	for _, c := range []struct {
		name   string
		n      int
		args   []string
		queues []string
		cycle  string
		stacks string // the diagnosis of the stacks alone
	}{{
		name: "pending", n: 3,
		queues: []string{
			"[0] posted receive from 1, tag 5, MPI_COMM_WORLD, 16 bytes (queued in the MPI, read through libompi_dbg_msgq.so)",
			"[0] posted receive from 1, tag 7, MPI_COMM_WORLD, 4 bytes (queued in the MPI, read through libompi_dbg_msgq.so)",
			"[2] posted receive from 1, tag 9, communicator 3 of 2 ranks, 16 bytes (queued in the MPI, read through libompi_dbg_msgq.so)",
			"[1] no MPI operation in flight",
		},
		cycle: "diagnosis: deadlock: a cycle of 3 ranks: rank 0 waits for 1 in MPI_Recv from 1, tag any, MPI_COMM_WORLD; " +
			"rank 1 waits for 0 or 2 in MPI_Barrier, on a communicator sdm cannot tell; rank 2 waits for 1 in MPI_Recv from 1, tag 9, communicator 3 of 2 ranks",
		stacks: "diagnosis: ranks in a collective wait for ranks that wait in point-to-point calls",
	}, {
		name: "ring", n: 4, args: []string{"ring"},
		queues: []string{"[0-3] posted send to rank+1, tag 0, MPI_COMM_WORLD, 524288 bytes (queued in the MPI, read through libompi_dbg_msgq.so)"},
		cycle:  "diagnosis: deadlock: a cycle of 4 ranks: ranks 0-3 each wait in MPI_Send to rank+1, tag 0, MPI_COMM_WORLD",
		stacks: "diagnosis: every rank waits in point-to-point MPI calls",
	}} {
		t.Run(c.name, func(t *testing.T) {
			argv := append([]string{mpirun, "--allow-run-as-root", "--oversubscribe", "-np", strconv.Itoa(c.n),
				filepath.Join(testenv.Examples(t), "pending")}, c.args...)
			_, pid := detached(t, []string{"OMPI_MPIR_DO_NOT_WARN=1"}, argv...)
			want := c.cycle
			if !typed {
				want = c.stacks
			}
			// The ranks hang once each is in its last call: until then
			// the diagnosis differs.
			var out string
			deadline := time.Now().Add(60 * time.Second)
			for {
				var stderr string
				var code int
				out, stderr, code = run(t, "", "stacks", "--pid", strconv.Itoa(pid), "--deadlock")
				if code == 0 && strings.Contains(out, want) {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("sdm stacks --pid --deadlock did not say %q within 60 s: exit %d\n%s%s", want, code, out, stderr)
				}
			}
			out, stderr, code := run(t, "", "attach", "--pid", strconv.Itoa(pid), "-e", "queues", "-e", "deadlock", "-e", "detach")
			if !typed {
				for _, w := range []string{"its MPI's message-queue library could not be read", "deadlock reads the stacks alone"} {
					if !strings.Contains(out, w) {
						t.Errorf("no %q in:\n%s%s", w, out, stderr)
					}
				}
				return
			}
			if code != 0 {
				t.Fatalf("attach: exit %d\n%s%s", code, out, stderr)
			}
			for _, w := range append(c.queues, c.cycle) {
				if !strings.Contains(out, w) {
					t.Errorf("no %q in:\n%s", w, out)
				}
			}
			free(t, rankPids(t, pid, c.n)...)
		})
	}
}

// libmpiTyped says whether sdm's build made the types of the libmpi
// that Open MPI's compiler links (mpiq/lib/types.sh), or that libmpi
// carries its own.
func libmpiTyped(t *testing.T) bool {
	t.Helper()
	dir, err := exec.Command("pkg-config", "--variable=libdir", "ompi-c").Output()
	if err != nil {
		t.Fatalf("pkg-config ompi-c: %v", err)
	}
	lib, err := filepath.EvalSymlinks(filepath.Join(strings.TrimSpace(string(dir)), "libmpi.so"))
	if err != nil {
		t.Fatal(err)
	}
	if stackwalk.HasDebugInfo(lib) {
		return true
	}
	id, err := stackwalk.BuildID(lib)
	if err != nil {
		t.Fatal(err)
	}
	_, err = os.Stat(filepath.Join(filepath.Dir(sdmBin), mpiq.TypesDir, id+".so"))
	return err == nil
}
