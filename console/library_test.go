package console

import (
	"strings"
	"testing"

	"github.com/sdm-hpc/sdm/wire"
)

// The queues a job's MPI library holds posted (a job sdm attached to)
// complete with the calls the ranks' stacks show them in: the pending
// example's ranks, rank 1 in a barrier of a communicator it shares with
// rank 2 (which communicator, the library does not say).
func TestDeadlockFromLibraryQueues(t *testing.T) {
	lib := "libompi_dbg_msgq.so"
	split := map[int]wire.RankSet{3: wire.Range(1, 2)}
	posted := func(peer, tag, comm, size int) wire.MPIOp {
		return wire.MPIOp{Call: wire.PostedRecv, Peer: peer, Tag: tag, Comm: comm, CommSize: size, Root: wire.NoRank, Request: true}
	}
	queues := map[int]wire.Queues{
		0: {Rank: 0, Size: 3, Library: lib, Ops: []wire.MPIOp{posted(1, 7, 0, 3), posted(1, 5, 0, 3)}},
		1: {Rank: 1, Size: 3, Library: lib, Comms: split},
		2: {Rank: 2, Size: 3, Library: lib, Comms: split, Ops: []wire.MPIOp{posted(1, 9, 3, 2)}},
	}
	var tree wire.CallTree
	for r, frames := range map[int][]wire.Frame{0: call("PMPI_Recv", 116), 1: call("PMPI_Barrier", 118), 2: call("PMPI_Recv", 120)} {
		tree.AddStack(r, frames)
	}
	tree.Sort()
	d := Diagnose(mainRoots(TreeOf(tree)), wire.RankSet{}).WithQueues(queues, 3)
	text := strings.Join(d.Lines, "\n")
	want := "diagnosis: deadlock: a cycle of 3 ranks: rank 0 waits for 1 in MPI_Recv from 1, tag any, MPI_COMM_WORLD; " +
		"rank 1 waits for 0 or 2 in MPI_Barrier, on a communicator sdm cannot tell; rank 2 waits for 1 in MPI_Recv from 1, tag 9, communicator 3 of 2 ranks"
	if !strings.Contains(text, want) {
		t.Errorf("no %q in:\n%s", want, text)
	}
}
