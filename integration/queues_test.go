package integration

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sdm-hpc/sdm/console"
	"github.com/sdm-hpc/sdm/op"
	"github.com/sdm-hpc/sdm/testkit/testenv"
	"github.com/sdm-hpc/sdm/wire"
)

// Three ranks of examples/pending, in C and in Fortran through the mpi and
// the mpi_f08 modules (whose calls reach Open MPI past the C bindings), under Open MPI and MPICH, each stopped
// in the MPI call it hangs in: queues shows each rank's operations in
// flight, as the library sdm preloads keeps them (peers as world ranks
// through a communicator of two, the posted receive), and deadlock finds
// the cycle of ranks 1 and 2 and rank 0 behind it, sdm debug's default.
// With --queues=false the ranks have no table: Open MPI's are read
// through its own message-queue library, MPICH's have no queues and
// deadlock reads their stacks alone.
func TestQueuesAndDeadlock(t *testing.T) {
	testenv.RequireTool(t, "gdb")
	bin := testenv.Examples(t)
	for _, mpi := range []struct{ rm, tool, program string }{
		{"openmpi", "mpirun.openmpi", "pending"},
		{"mpich", "mpiexec.mpich", "pending-mpich"},
		{"openmpi", "mpirun.openmpi", "pending-f"},
		{"mpich", "mpiexec.mpich", "pending-f-mpich"},
		{"openmpi", "mpirun.openmpi", "pending-f08"},
		{"mpich", "mpiexec.mpich", "pending-f08-mpich"},
	} {
		t.Run(mpi.program, func(t *testing.T) {
			testenv.RequireTool(t, mpi.tool)
			args := debugUnder(mpi.rm, 3)
			dot := filepath.Join(t.TempDir(), "waits.dot")
			script := []string{"-e", "break PMPI_Recv", "-e", "break PMPI_Barrier", "-e", "run", "-e", "wait",
				"-e", "[0] where", "-e", "[0] up", "-e", "[0] down", "-e", "stacks", "-e", "queues",
				"-e", "deadlock --dot " + dot, "-e", "kill", "--", filepath.Join(bin, mpi.program)}
			out, stderr, code := run(t, "", append(args, script...)...)
			if code != 0 {
				t.Fatalf("exit %d\n%s%s", code, out, stderr)
			}
			for _, want := range []string{
				"[0] MPI_Irecv from 1, tag 5, MPI_COMM_WORLD, 16 bytes, posted: waiting ",
				"[0] MPI_Recv from 1, tag 7, MPI_COMM_WORLD, 4 bytes: waiting ",
				"[1] MPI_Barrier, communicator 1 of 2 ranks: waiting ",
				"[2] MPI_Recv from 1, tag 9, communicator 1 of 2 ranks, 16 bytes: waiting ",
				"diagnosis: deadlock: a cycle of 2 ranks: rank 1 waits for 2 in MPI_Barrier, communicator 1 of 2 ranks; rank 2 waits for 1 in MPI_Recv from 1, tag 9",
				"diagnosis: rank 0 waits for the ranks of the cycle",
			} {
				if !strings.Contains(out, want) {
					t.Errorf("no %q in:\n%s", want, out)
				}
			}
			// The library's wrappers are frames of their own, left out by
			// where, and passed over by up and down.
			if strings.Contains(out, "libsdmq") || !strings.HasPrefix(mpi.program, "pending-f") &&
				(!strings.Contains(out, "    #2  main (") || !strings.Contains(out, "[0] #2  main at examples/pending/pending.c:") ||
					!strings.Contains(out, "[0] #0  PMPI_Recv from")) {
				t.Errorf("the library's frames are shown, or the program's frame does not keep gdb's number:\n%s", out)
			}
			if graph, err := os.ReadFile(dot); err != nil || !strings.Contains(string(graph), `[1] 1\nMPI_Barrier, communicator 1 of 2 ranks`) {
				t.Errorf("deadlock --dot: %v\n%s", err, graph)
			}
			out, stderr, code = run(t, "", append(append(args, "--queues=false"), script...)...)
			if mpi.rm == "openmpi" && libmpiTyped(t) {
				// Read through Open MPI's own library instead: at the
				// breakpoints, before the blocking calls post anything.
				for _, want := range []string{
					"[0] posted receive from 1, tag 5, MPI_COMM_WORLD, 16 bytes (queued in the MPI, read through libompi_dbg_msgq.so)",
					"[1-2] no MPI operation in flight", "rank 1 waits in MPI_Barrier at examples/pending/pending",
					"diagnosis: rank 1 waits for rank 2, which is in MPI_Recv at examples/pending/pending",
				} {
					if code != 0 || !strings.Contains(out, want) {
						t.Errorf("--queues=false: exit %d, no %q in:\n%s%s", code, want, out, stderr)
					}
				}
				return
			}
			if code != 1 {
				t.Fatalf("--queues=false: exit %d, want 1 for the ranks queues answered with errors\n%s%s", code, out, stderr)
			}
			if !strings.Contains(stderr, "no wait-for graph to draw") {
				t.Errorf("--queues=false: deadlock --dot did not say it has no graph:\n%s", stderr)
			}
			why := "its MPI's message-queue library could not be read"
			if mpi.rm == "mpich" {
				why = "MPICH as Debian builds it has no message-queue library of its own: deadlock reads the stacks alone"
			}
			for _, want := range []string{"[0-2] error: no MPI operations recorded: the rank runs without sdm's queue library", why,
				"rank 1 waits in MPI_Barrier at examples/pending/pending",
				"diagnosis: ranks in a collective wait for ranks that wait in point-to-point calls"} {
				if !strings.Contains(out, want) {
					t.Errorf("--queues=false: no %q in:\n%s", want, out)
				}
			}
		})
	}
	// Waits on requests of every sort (examples/pending requests): a
	// persistent receive, MPI_Ibarrier, a synchronous send, and MPI-4's
	// MPI_Isendrecv and MPI_Recv_c under MPICH.
	for _, mpi := range []struct{ rm, tool, program, recv, posted string }{
		{"openmpi", "mpirun.openmpi", "pending", "PMPI_Recv", "MPI_Irecv"},
		{"mpich", "mpiexec.mpich", "pending-mpich", "PMPI_Recv_c", "MPI_Isendrecv"},
	} {
		t.Run(mpi.program+"-requests", func(t *testing.T) {
			testenv.RequireTool(t, mpi.tool)
			args := debugUnder(mpi.rm, 3)
			// Rank 0 stopped first in a test of the exchange that completes:
			// finish goes back to the program past the library's wrapper.
			out, stderr, code := run(t, "", append(args, "-e", "[0] tbreak PMPI_Testall", "-e", "break PMPI_Waitall",
				"-e", "break "+mpi.recv, "-e", "run", "-e", "[0] wait", "-e", "[0] finish", "-e", "[0] continue",
				"-e", "wait", "-e", "queues", "-e", "deadlock", "-e", "kill", "--", filepath.Join(bin, mpi.program), "requests")...)
			if code != 0 {
				t.Fatalf("exit %d\n%s%s", code, out, stderr)
			}
			for _, want := range []string{
				"[0] MPI_Recv_init from 1, tag 11, MPI_COMM_WORLD, 4 bytes, posted: waiting ",
				"[0-1] MPI_Ibarrier, MPI_COMM_WORLD, posted: waiting ",
				"[1] MPI_Issend to 2, tag 12, MPI_COMM_WORLD, 8 bytes, posted: waiting ",
				"[2] " + mpi.posted + " from 1, tag 15, MPI_COMM_WORLD, 12 bytes, posted: waiting ",
				"[2] MPI_Recv from 1, tag 14, MPI_COMM_WORLD, 4 bytes: waiting ",
				"diagnosis: deadlock: a cycle of 2 ranks: rank 1 waits for 2 in MPI_Waitall, on 2 requests; rank 2 waits for 1 in MPI_Recv from 1, tag 14",
				"diagnosis: rank 0 waits for the ranks of the cycle",
				"diagnosis: rank 2 waits for tag 14 from rank 1, which sends it tag 12: no send matches the receive",
				"[0] stopped in requests at examples/pending/pending.c:",
			} {
				if !strings.Contains(out, want) {
					t.Errorf("no %q in:\n%s", want, out)
				}
			}
		})
	}
}

// A ring of real ranks in MPI_Send reaches the front end as one answer:
// the tree merges their queues (peers as one run), each operation with
// where the program called it.
func TestQueuesMergeInTheTree(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	const n = 6
	s := hungRing(ctx, t, n, true)
	groups, err := s.Command(ctx, wire.All(n), wire.OpQueues, nil, time.Minute)
	if err != nil || len(groups) != 1 {
		t.Fatalf("want one answer for the ring, got %s %v", describe(groups), err)
	}
	q, err := op.Queues.DecodeAnswer(groups[0].Body)
	if err != nil || len(q.Ops) != 1 {
		t.Fatalf("%+v %v", q, err)
	}
	o := q.Ops[0]
	if len(o.Peers) != 1 || o.Peers[0] != (wire.PeerRun{From: 0, Count: n, Peer: 1, Step: 1}) {
		t.Errorf("peers: %+v", o.Peers)
	}
	if o.At.Func != "main" || !strings.HasSuffix(o.At.File, "pending.c") || o.At.Line == 0 {
		t.Errorf("the call's place: %+v", o.At)
	}
	var out strings.Builder
	c := console.New(s, &out, console.Options{Timeout: time.Minute})
	if err := c.Exec(ctx, "queues"); err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf(", in main at %s:%d", o.At.File, o.At.Line)
	if !strings.HasPrefix(out.String(), "[0-5] MPI_Send to rank+1, tag 0, MPI_COMM_WORLD, 524288 bytes: waiting ") ||
		!strings.Contains(out.String(), want) {
		t.Errorf("queues: no %q in:\n%s", want, out.String())
	}
}

// A breakpoint on an MPI routine the preloaded library wraps has a
// location in the wrapper and one in the MPI's own routine, which the
// wrapper calls: each call of the program stops once, in the wrapper,
// with the program's frame above it. Rank 0 of a ring of two passes the
// token twice: two stops, the second in the second round, then the end.
func TestBreakOnAWrappedRoutine(t *testing.T) {
	testenv.RequireTool(t, "gdb")
	bin := testenv.Examples(t)
	for _, mpi := range []struct{ rm, tool, program string }{
		{"openmpi", "mpirun.openmpi", "ring"},
		{"mpich", "mpiexec.mpich", "ring-mpich"},
	} {
		t.Run(mpi.program, func(t *testing.T) {
			testenv.RequireTool(t, mpi.tool)
			args := debugUnder(mpi.rm, 2)
			out, stderr, code := run(t, "", append(args, "-e", "[0] break MPI_Send", "-e", "run",
				"-e", "[0] wait", "-e", "[0] continue", "-e", "[0] wait", "-e", "[0] where",
				"-e", "[0] delete", "-e", "[0] continue", "-e", "wait", "--", filepath.Join(bin, mpi.program), "2")...)
			if code != 0 {
				t.Fatalf("exit %d\n%s%s", code, out, stderr)
			}
			stops := regexp.MustCompile(`\[0\] stopped in (\S+) from (\S+)`).FindAllStringSubmatch(out, -1)
			if len(stops) != 2 {
				t.Fatalf("want 2 stops of rank 0, got %q in:\n%s", stops, out)
			}
			for _, s := range stops {
				if s[1] != "MPI_Send" || !strings.Contains(s[2], "libsdmq-") {
					t.Errorf("stopped in %s from %s, want the wrapper's MPI_Send:\n%s", s[1], s[2], out)
				}
			}
			if !regexp.MustCompile(`#1  pass \(token=1, rank=0, size=2\) at examples/ring/ring.c:10`).MatchString(out) {
				t.Errorf("the second stop is not the second round's send:\n%s", out)
			}
			if !strings.Contains(out, "[0-1] exited with code 0") {
				t.Errorf("the ring did not end:\n%s", out)
			}
		})
	}
}

// debugUnder is sdm debug's arguments for n ranks under rm's launcher,
// Open MPI's allowed more ranks than cores.
func debugUnder(rm string, n int) []string {
	args := []string{"debug", "--rm", rm, "-n", strconv.Itoa(n), "--timeout", "60s"}
	if rm == "openmpi" {
		args = append(args, "--launcher-arg=--oversubscribe")
	}
	return args
}
