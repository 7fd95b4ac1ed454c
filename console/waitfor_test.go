package console

import (
	"strings"
	"testing"

	"github.com/sdm-hpc/sdm/wire"
)

func mpiOp(call string, peer, tag int) wire.MPIOp {
	return wire.MPIOp{Call: call, Peer: peer, Tag: tag, CommSize: 4, Root: wire.NoRank}
}

func TestWaitForGraph(t *testing.T) {
	q := func(ops ...wire.MPIOp) wire.Queues { return wire.Queues{Size: 4, Ops: ops} }
	for _, c := range []struct {
		name   string
		queues map[int]wire.Queues
		busy   map[int]string
		want   []string
		none   bool
	}{{
		name:   "a ring of sends",
		queues: map[int]wire.Queues{0: q(mpiOp("MPI_Send", 1, 0)), 1: q(mpiOp("MPI_Send", 2, 0)), 2: q(mpiOp("MPI_Send", 3, 0)), 3: q(mpiOp("MPI_Send", 0, 0))},
		want:   []string{"deadlock: a cycle of 4 ranks: ranks 0-3 each wait in MPI_Send to rank+1, tag 0, MPI_COMM_WORLD"},
	}, {
		name: "two receives from each other, one behind them",
		queues: map[int]wire.Queues{0: q(mpiOp("MPI_Recv", 1, 7)), 1: q(mpiOp("MPI_Recv", 0, 7)), 2: q(mpiOp("MPI_Recv", 1, 3)),
			3: q(mpiOp("MPI_Recv", 2, 3))},
		want: []string{"deadlock: a cycle of 2 ranks: rank 0 waits for 1 in MPI_Recv from 1, tag 7, MPI_COMM_WORLD; rank 1 waits for 0 in MPI_Recv from 0",
			"ranks 2-3 wait for the ranks of the cycle, and are not released when it is"},
	}, {
		name:   "a rank computing",
		queues: map[int]wire.Queues{0: q(mpiOp("MPI_Recv", 3, 0)), 1: q(mpiOp("MPI_Recv", 3, 0)), 2: q(mpiOp("MPI_Recv", 3, 0)), 3: q()},
		busy:   map[int]string{3: "not in MPI: in compute at x.c:7"},
		want:   []string{"ranks 0-2 wait for rank 3, which is not in MPI: in compute at x.c:7"},
	}, {
		name: "a collective some never reach",
		queues: map[int]wire.Queues{0: q(mpiOp("MPI_Barrier", wire.NoRank, 0)), 1: q(mpiOp("MPI_Barrier", wire.NoRank, 0)),
			2: q(mpiOp("MPI_Barrier", wire.NoRank, 0)), 3: q(mpiOp("MPI_Recv", 0, 4))},
		want: []string{"deadlock: a cycle of 2 ranks: rank 0 waits for 3 in MPI_Barrier", "rank 3 waits for 0 in MPI_Recv from 0, tag 4",
			"ranks 1-2 wait for the ranks of the cycle"},
	}, {
		name: "any source, and nobody left to send",
		queues: map[int]wire.Queues{0: q(mpiOp("MPI_Recv", wire.AnySource, wire.AnyTag)), 1: q(mpiOp("MPI_Recv", 0, 1)),
			2: q(mpiOp("MPI_Recv", 0, 1)), 3: q(mpiOp("MPI_Recv", 0, 1))},
		want: []string{"deadlock: a cycle of 4 ranks: rank 0 waits for 1 or 2 or 3 in MPI_Recv from any rank, tag any"},
	}, {
		name:   "a receive for a tag never sent",
		queues: map[int]wire.Queues{0: q(mpiOp("MPI_Recv", 1, 7)), 1: q(mpiOp("MPI_Ssend", 0, 8)), 2: q(), 3: q()},
		want: []string{"deadlock: a cycle of 2 ranks",
			"rank 0 waits for tag 7 from rank 1, which sends it tag 8: no send matches the receive"},
	}, {
		name: "collectives that do not match",
		queues: map[int]wire.Queues{0: q(mpiOp("MPI_Allreduce", wire.NoRank, 0)), 1: q(mpiOp("MPI_Allreduce", wire.NoRank, 0)),
			2: q(mpiOp("MPI_Allreduce", wire.NoRank, 0)), 3: q(mpiOp("MPI_Bcast", wire.NoRank, 0))},
		want: []string{"deadlock: a cycle of 4 ranks",
			"collectives that do not match on MPI_COMM_WORLD: ranks 0-2 in MPI_Allreduce, rank 3 in MPI_Bcast"},
	}, {
		name:   "a send and its receive under way",
		queues: map[int]wire.Queues{0: q(mpiOp("MPI_Send", 1, 5)), 1: q(mpiOp("MPI_Recv", 0, wire.AnyTag)), 2: q(), 3: q()},
		none:   true,
	}, {
		name: "a wait on requests",
		queues: map[int]wire.Queues{0: q(mpiOp("MPI_Irecv", 1, 2), mpiOp("MPI_Waitall", wire.NoRank, 0)), 1: q(mpiOp("MPI_Recv", 0, 2)),
			2: q(), 3: q()},
		want: []string{"deadlock: a cycle of 2 ranks: rank 0 waits for 1 in MPI_Waitall, on 0 requests; rank 1 waits for 0 in MPI_Recv from 0, tag 2"},
	}, {
		name: "waits on a nonblocking collective and posted sends",
		queues: map[int]wire.Queues{
			0: q(mpiOp("MPI_Ibarrier", wire.NoRank, 0), mpiOp("MPI_Recv_init", 1, 11), mpiOp("MPI_Waitall", wire.NoRank, 0)),
			1: q(mpiOp("MPI_Ibarrier", wire.NoRank, 0), mpiOp("MPI_Issend", 2, 12), mpiOp("MPI_Waitall", wire.NoRank, 0)),
			2: q(mpiOp("MPI_Isendrecv", 1, 15), mpiOp("MPI_Recv", 1, 14)),
			3: q(mpiOp("MPI_Ibarrier", wire.NoRank, 0), mpiOp("MPI_Wait", wire.NoRank, 0))},
		want: []string{"deadlock: a cycle of 2 ranks: rank 1 waits for 2 in MPI_Waitall",
			"rank 2 waits for 1 in MPI_Recv from 1, tag 14",
			"ranks 0,3 wait for the ranks of the cycle",
			"rank 2 waits for tag 14 from rank 1, which sends it tag 12: no send matches the receive"},
	}, {
		name: "a nonblocking collective every member posted",
		queues: map[int]wire.Queues{0: q(mpiOp("MPI_Iallreduce", wire.NoRank, 0), mpiOp("MPI_Wait", wire.NoRank, 0)),
			1: q(mpiOp("MPI_Iallreduce", wire.NoRank, 0), mpiOp("MPI_Wait", wire.NoRank, 0)),
			2: q(mpiOp("MPI_Iallreduce", wire.NoRank, 0), mpiOp("MPI_Wait", wire.NoRank, 0)),
			3: q(mpiOp("MPI_Iallreduce", wire.NoRank, 0), mpiOp("MPI_Waitall", wire.NoRank, 0))},
		none: true,
	}} {
		t.Run(c.name, func(t *testing.T) {
			for r, qu := range c.queues {
				for i := range qu.Ops {
					if call := qu.Ops[i].Call; strings.HasPrefix(call, "MPI_I") || strings.HasSuffix(call, "_init") {
						qu.Ops[i].Request = true
					}
				}
				c.queues[r] = qu
			}
			lines := buildWaitFor(c.queues, 4).lines(4, c.busy)
			got := strings.Join(lines, "\n")
			if c.none && len(lines) != 0 {
				t.Fatalf("found %q, want nothing", got)
			}
			for _, w := range c.want {
				if !strings.Contains(got, w) {
					t.Errorf("no %q in:\n%s", w, got)
				}
			}
		})
	}
}

// The graph drawn: a ring is one node waiting for itself; a rank outside
// MPI a node of its own, with where it is.
func TestWaitForDot(t *testing.T) {
	q := func(ops ...wire.MPIOp) wire.Queues { return wire.Queues{Size: 4, Ops: ops} }
	ring := map[int]wire.Queues{0: q(mpiOp("MPI_Send", 1, 0)), 1: q(mpiOp("MPI_Send", 2, 0)), 2: q(mpiOp("MPI_Send", 3, 0)), 3: q(mpiOp("MPI_Send", 0, 0))}
	dot := buildWaitFor(ring, 4).dot(4, nil)
	if !strings.Contains(dot, `n0 [label="[0-3] 4\nMPI_Send to rank+1, tag 0, MPI_COMM_WORLD"];`) || !strings.Contains(dot, "n0 -> n0;") {
		t.Errorf("ring:\n%s", dot)
	}
	hang := map[int]wire.Queues{0: q(mpiOp("MPI_Recv", 3, 0)), 1: q(mpiOp("MPI_Recv", 3, 0)), 2: q(mpiOp("MPI_Recv", wire.AnySource, 0)), 3: q()}
	dot = buildWaitFor(hang, 4).dot(4, map[int]string{3: "in compute at x.c:7"})
	for _, want := range []string{`[3] 1\nin compute at x.c:7`, `[0-1] 2\nMPI_Recv from 3, tag 0`, "[style=dashed]"} {
		if !strings.Contains(dot, want) {
			t.Errorf("no %q in:\n%s", want, dot)
		}
	}
}
