package console

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/sdm-hpc/sdm/op"
	"github.com/sdm-hpc/sdm/wire"
)

// stacksOf is a sample answer: each rank's main thread's frames,
// innermost first.
func stacksOf(stacks map[int][]wire.Frame, moved wire.RankSet) func(context.Context, wire.RankSet, string) ([]wire.Group, error) {
	var t wire.CallTree
	for r, frames := range stacks {
		t.AddStack(r, frames)
	}
	t.Samples, t.Moved = 1, moved
	if !moved.Empty() {
		t.Samples = 2
	}
	t.Sort()
	return func(_ context.Context, ranks wire.RankSet, op string) ([]wire.Group, error) {
		if op != wire.OpSample {
			return nil, errors.New("deadlock sent " + op)
		}
		return []wire.Group{{Ranks: ranks, Status: wire.StatusOK, Body: wire.MustEncode(t)}}, nil
	}
}

var (
	mainAt   = wire.Frame{Func: "main", File: "x.c", Line: 40}
	libmpi   = "libmpi.so.40"
	progress = []wire.Frame{{Func: "epoll_wait", From: "libc.so.6"}, {Func: "start_thread", From: "libc.so.6"}}
)

func call(fn string, line int) []wire.Frame {
	return []wire.Frame{{Func: "poll", From: "libc.so.6"}, {Func: "opal_progress", From: "libopen-pal.so.40"},
		{Func: fn, From: libmpi}, {Func: "exchange", File: "x.c", Line: line}, mainAt}
}

func TestDeadlockDiagnoses(t *testing.T) {
	for _, c := range []struct {
		name   string
		stacks map[int][]wire.Frame
		moved  wire.RankSet
		want   []string
	}{{
		name: "a rank computing while the others wait",
		stacks: map[int][]wire.Frame{0: call("PMPI_Recv", 12), 1: call("PMPI_Recv", 12), 2: call("PMPI_Recv", 12),
			3: {{Func: "compute", File: "x.c", Line: 7}, mainAt}, 4: progress},
		moved: wire.Single(3),
		want: []string{
			"ranks 0-2 wait in MPI_Recv at x.c:12 (exchange)",
			"rank 3 is not waiting in MPI: in compute at x.c:7 (moving)",
			"diagnosis: rank 3 is outside MPI while ranks 0-2 wait: the waits likely lead there (the root of the hang)",
		},
	}, {
		name: "collectives that do not match, in Fortran",
		stacks: map[int][]wire.Frame{0: call("PMPI_Allreduce", 20), 1: call("ompi_allreduce_f", 20),
			2: call("mpi_bcast_", 22)},
		want: []string{
			"ranks 0-1 wait in MPI_Allreduce at x.c:20 (exchange)",
			"rank 2 waits in MPI_Bcast at x.c:22 (exchange)",
			"diagnosis: collectives that do not match (MPI_Allreduce, MPI_Bcast)",
		},
	}, {
		name:   "a ring of sends",
		stacks: map[int][]wire.Frame{0: call("MPI_Send", 30), 1: call("MPI_Send", 30), 2: call("MPI_Ssend", 31)},
		want: []string{
			"ranks 0-1 wait in MPI_Send at x.c:30 (exchange)",
			"rank 2 waits in MPI_Ssend at x.c:31 (exchange)",
			"diagnosis: every rank waits in point-to-point MPI calls and none is left to match them",
		},
	}, {
		name: "a collective some ranks never reach",
		stacks: map[int][]wire.Frame{0: call("PMPI_Barrier", 50), 1: call("PMPI_Barrier", 50),
			2: call("PMPI_Waitall", 44)},
		want: []string{"diagnosis: ranks in a collective wait for ranks that wait in point-to-point calls"},
	}, {
		name: "a rank polling MPI_Test is busy, in its library's sleep",
		stacks: map[int][]wire.Frame{0: call("PMPI_Recv", 12),
			1: {{Func: "PMPI_Test", From: libmpi}, {Func: "poll_loop", File: "x.c", Line: 60}, mainAt},
			2: {{Func: "nanosleep", From: "libc.so.6"}, {Func: "usleep", From: "libc.so.6"}, {Func: "rest", File: "x.c", Line: 70}, mainAt}},
		want: []string{
			"rank 1 is not waiting in MPI: in PMPI_Test from libmpi.so.40, called from poll_loop at x.c:60",
			"rank 2 is not waiting in MPI: in nanosleep from libc.so.6, called from rest at x.c:70",
			"diagnosis: ranks 1-2 are outside MPI while rank 0 waits",
		},
	}, {
		name:   "no rank in MPI",
		stacks: map[int][]wire.Frame{0: {{Func: "compute", File: "x.c", Line: 7}, mainAt}},
		want:   []string{"diagnosis: no rank waits in a blocking MPI call: not an MPI deadlock"},
	}} {
		t.Run(c.name, func(t *testing.T) {
			f := newFakeTree(5, runningState)
			f.answer = stacksOf(c.stacks, c.moved)
			out, err := execLines(t, f, Options{}, "deadlock")
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range c.want {
				if !strings.Contains(out, w) {
					t.Errorf("no %q in:\n%s", w, out)
				}
			}
		})
	}
}

// A rank seen in two MPI calls over the samples moves: it waits in
// neither.
func TestDeadlockRankAtTwoPlacesMoves(t *testing.T) {
	var tr wire.CallTree
	tr.AddStack(0, call("PMPI_Recv", 12))
	tr.AddStack(1, call("PMPI_Recv", 12))
	tr.AddStack(1, call("PMPI_Send", 14))
	tr.Sort()
	d := Diagnose(callTreeNodes(tr.Roots), wire.Single(1))
	if len(d.Waits) != 1 || d.Waits[0].Ranks.String() != "0" || len(d.Busy) != 1 || d.Busy[0].Ranks.String() != "1" || !d.Busy[0].Moved {
		t.Fatalf("%+v", d)
	}
}

func TestDeadlockJSON(t *testing.T) {
	f := newFakeTree(5, runningState)
	f.answer = stacksOf(map[int][]wire.Frame{0: call("PMPI_Recv", 12), 1: {{Func: "compute", File: "x.c", Line: 7}, mainAt}}, wire.RankSet{})
	out, err := execLines(t, f, Options{JSON: true}, "deadlock")
	if err != nil {
		t.Fatal(err)
	}
	var reply struct {
		Groups []struct {
			Op, Ranks string
			Value     struct {
				Waits     []map[string]any
				Busy      []map[string]any
				Diagnosis string
			}
		}
	}
	if err := json.Unmarshal([]byte(out), &reply); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	g := reply.Groups[0]
	if g.Op != "deadlock" || len(g.Value.Waits) != 1 || g.Value.Waits[0]["call"] != "MPI_Recv" || len(g.Value.Busy) != 1 ||
		g.Value.Busy[0]["func"] != "compute" || !strings.HasPrefix(g.Value.Diagnosis, "diagnosis: rank 1 is outside MPI") {
		t.Fatalf("%s", out)
	}
}

func TestMPICall(t *testing.T) {
	for fn, want := range map[string]MPICall{
		"MPI_Recv": {"MPI_Recv", "point-to-point"}, "PMPI_Allreduce": {"MPI_Allreduce", "collective"},
		"mpi_waitall_": {"MPI_Waitall", "completion"}, "MPI_BARRIER": {"MPI_Barrier", "collective"},
		"mpi_send_f08": {"MPI_Send", "point-to-point"}, "ompi_bcast_f": {"MPI_Bcast", "collective"},
		"pmpi_recv__": {"MPI_Recv", "point-to-point"}, "MPI_Isend": {"MPI_Isend", ""},
		"MPI_Comm_rank": {"MPI_Comm_rank", ""}, "MPI_Send_c": {"MPI_Send", "point-to-point"},
		"PMPI_Allreduce_c": {"MPI_Allreduce", "collective"},
	} {
		if got, ok := mpiCall(fn); !ok || got != want {
			t.Errorf("mpiCall(%q) = %+v, %v; want %+v", fn, got, ok, want)
		}
	}
	for _, fn := range []string{"ompi_request_default_wait", "opal_progress", "MPIR_Wait_impl", "mpi_", "MPI_T_init_thread", "main"} {
		if got, ok := mpiCall(fn); ok {
			t.Errorf("mpiCall(%q) = %+v, want none", fn, got)
		}
	}
}

// stacks --deadlock prints the tree, the classes, then the diagnosis; the
// flag survives the line sdm stacks gives the console.
func TestStacksDeadlock(t *testing.T) {
	f := newFakeTree(9, runningState)
	f.answer = hungJob(1)
	out, err := execLines(t, f, Options{}, "stacks --deadlock")
	if err != nil {
		t.Fatal(err)
	}
	tree, diag := strings.Index(out, "[0-7] main at hang.c:30 (8 ranks)"), strings.Index(out, "diagnosis: rank 7 is outside MPI while ranks 0-6 wait")
	if tree < 0 || diag < tree || !strings.Contains(out, "rank 6 waits in MPI_Send at hang.c:12 (exchange)") {
		t.Fatalf("stacks --deadlock:\n%s", out)
	}
	line, err := StacksRequest{Sample: wire.Sample{Count: 3, Interval: DefaultInterval}, Deadlock: true}.Line()
	if r, perr := ParseStacks(strings.TrimPrefix(line, "stacks")); err != nil || perr != nil || !r.Deadlock || r.Sample.Count != 3 {
		t.Fatalf("%q: %+v, %v, %v", line, r, err, perr)
	}
	if _, err := execLines(t, f, Options{}, "deadlock --deadlock"); err == nil {
		t.Fatal("deadlock --deadlock: no error")
	}
}

// queues merges the ranks' operations: a ring's sends by their offset,
// a shared receive by its peer, the ranks with none apart.
func TestQueuesMerge(t *testing.T) {
	world := func(size int, ops ...wire.MPIOp) wire.Queues { return wire.Queues{Size: size, Ops: ops} }
	send := func(to int) wire.MPIOp {
		return wire.MPIOp{Call: "MPI_Send", Peer: to, Tag: 0, CommSize: 4, Count: 1, Bytes: 8, Root: wire.NoRank, Waiting: 2 * time.Second, Least: 2 * time.Second}
	}
	qs := map[int]wire.Queues{0: world(4, send(1)), 1: world(4, send(2)), 2: world(4, send(3)), 3: world(4, send(0))}
	groups, idle := GroupQueues(qs)
	if len(groups) != 1 || groups[0].Text != "MPI_Send to rank+1, tag 0, MPI_COMM_WORLD, 8 bytes" || groups[0].Ranks.String() != "0-3" || !idle.Empty() {
		t.Fatalf("ring: %+v, idle %v", groups, idle)
	}
	recv := wire.MPIOp{Call: "MPI_Recv", Peer: 3, Tag: 7, CommSize: 4, Count: 1, Bytes: 4, Root: wire.NoRank, Waiting: time.Second, Least: time.Second}
	qs = map[int]wire.Queues{0: world(4, recv), 1: world(4, recv), 2: world(4, recv), 3: world(4)}
	f := newFakeTree(4, runningState)
	f.answer = func(_ context.Context, ranks wire.RankSet, name string) ([]wire.Group, error) {
		if name != wire.OpQueues {
			return nil, errors.New("queues sent " + name)
		}
		var m op.QueueClasses // as the tree merges them
		for r, q := range qs {
			m.Add(wire.Single(r), wire.StatusOK, wire.MustEncode(q))
		}
		return m.Groups(), nil
	}
	out, err := execLines(t, f, Options{}, "queues")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"[0-2] MPI_Recv from 3, tag 7, MPI_COMM_WORLD, 4 bytes: waiting 1.0 s\n", "[3] no MPI operation in flight\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in:\n%s", want, out)
		}
	}
}
