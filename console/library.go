package console

import (
	"slices"

	"github.com/sdm-hpc/sdm/wire"
)

// withCalls completes the queues read through an MPI's message-queue
// library (a job sdm attached to), which list what the MPI holds posted
// but not the call each rank is blocked in, with the call the rank's
// stack shows it in (waits): a receive or a send with the peer, tag and
// communicator its posted operations of that kind agree on (any rank,
// tag or MPI_COMM_WORLD where they do not: a wait for any of them, so
// that no deadlock is claimed that is not there), a wait on the requests
// posted, and a collective on MPI_COMM_WORLD where the rank knows no
// other communicator, else on one of its communicators (commUnknown: it
// waits for any of their other members). A receive or send with nothing
// posted to name its peer is left out: the rank then counts as able to
// go on.
func withCalls(queues map[int]wire.Queues, waits []Wait) map[int]wire.Queues {
	out := map[int]wire.Queues{}
	for r, q := range queues {
		out[r] = q
	}
	for _, w := range waits {
		w.Ranks.Each(func(r int) bool {
			q, ok := out[r]
			if !ok || q.Library == "" {
				return true
			}
			if op, ok := blockedIn(w.Call, q); ok {
				q.Ops = append(slices.Clip(q.Ops), op)
				out[r] = q
			}
			return true
		})
	}
	return out
}

// blockedIn is the operation of a rank blocked in call, from its posted
// operations q.
func blockedIn(call MPICall, q wire.Queues) (wire.MPIOp, bool) {
	op := wire.MPIOp{Call: call.Name, Peer: wire.NoRank, Root: wire.NoRank}
	switch call.Kind {
	case "completion":
		for _, p := range q.Ops {
			if p.Request {
				op.Count++
			}
		}
		return op, op.Count > 0
	case "collective":
		op.CommSize = q.Size
		for _, members := range q.Comms {
			if members.Count() > 1 {
				op.Comm, op.CommSize = commUnknown, 0
			}
		}
		return op, q.Size > 0
	case "point-to-point":
		posted := wire.PostedSend
		if receives(op) {
			posted = wire.PostedRecv
		}
		first := true
		for _, p := range q.Ops {
			if p.Call != posted {
				continue
			}
			if first {
				op.Peer, op.Tag, op.Comm, op.CommSize, first = p.Peer, p.Tag, p.Comm, p.CommSize, false
				continue
			}
			if p.Peer != op.Peer {
				op.Peer = wire.AnySource
			}
			if p.Tag != op.Tag {
				op.Tag = wire.AnyTag
			}
			if p.Comm != op.Comm {
				op.Comm, op.CommSize, op.Peer = 0, q.Size, wire.AnySource
			}
		}
		return op, !first
	}
	return op, false
}

// commUnknown is MPIOp.Comm of a collective whose communicator is one of
// the rank's, which one unknown: the rank waits for any other member of
// any of them.
const commUnknown = -1

// anyMembers are the members of the communicators of q with more than
// one, MPI_COMM_WORLD's included (world).
func anyMembers(q wire.Queues, world wire.RankSet) wire.RankSet {
	all := world
	for _, members := range q.Comms {
		if members.Count() > 1 {
			all = all.Union(members)
		}
	}
	return all
}
