package op

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/sdm-hpc/sdm/wire"
)

// QueueClasses is the merger of the ranks' MPI queues (wire.Queues): the
// ranks whose operations differ only in their peers, waits and callers
// become one answer, their peers told as runs (wire.PeerRun), so that
// what travels up grows with the kinds of waiting in the job and the
// irregularity of its peers, not with its ranks: a ring of 1024 ranks in
// MPI_Send is one answer of one run. Failures merge as Identical merges
// them. The zero value is ready to use.
type QueueClasses struct {
	classes  map[string]*queueClass
	failures Identical
}

// queueClass is the ranks whose queues read alike but for peers.
type queueClass struct {
	q     wire.Queues // the first rank's, in the canonical order of ops
	ranks wire.Builder
	peers [][]rankPeer // by op
}

type rankPeer struct{ rank, peer int }

// Add implements Merger.
func (m *QueueClasses) Add(ranks wire.RankSet, status wire.Status, body []byte) {
	var q wire.Queues
	if status != wire.StatusOK || wire.Decode(body, &q) != nil {
		m.failures.Add(ranks, status, body)
		return
	}
	if m.classes == nil {
		m.classes = map[string]*queueClass{}
	}
	// What each op is but for its peer, worked out once for the ranks.
	base := make([]string, len(q.Ops))
	for i, o := range q.Ops {
		base[i] = opKey(o)
	}
	// Ranks come in ascending order, as do the runs: a cursor per op finds
	// each rank's run without searching them all.
	cursor := make([]int, len(q.Ops))
	ranks.Each(func(r int) bool {
		own := make([]keyedOp, len(q.Ops))
		for i, o := range q.Ops {
			for cursor[i] < len(o.Peers) && r >= o.Peers[cursor[i]].From+o.Peers[cursor[i]].Count {
				cursor[i]++
			}
			o.Peer, o.Peers = wire.MPIOp{Peer: o.Peer, Peers: o.Peers[cursor[i]:]}.PeerOf(r, q.Size), nil
			own[i] = keyedOp{key: base[i] + peerKind(o.Peer), off: offset(o.Peer, r, q.Size), op: o}
		}
		// One order for every rank, whatever the order of their waits:
		// by what the op is, then by its peer's offset from the rank.
		slices.SortStableFunc(own, func(a, b keyedOp) int { return cmp.Or(strings.Compare(a.key, b.key), a.off-b.off) })
		ops := make([]wire.MPIOp, len(own))
		var key strings.Builder
		key.WriteString(commsKey(q))
		for i, k := range own {
			ops[i] = k.op
			key.WriteString(";")
			key.WriteString(k.key)
		}
		c := m.classes[key.String()]
		if c == nil {
			c = &queueClass{q: q, peers: make([][]rankPeer, len(ops))}
			c.q.Ops = ops
			m.classes[key.String()] = c
		} else {
			for i, o := range ops {
				x := &c.q.Ops[i]
				x.Waiting, x.Least = max(x.Waiting, o.Waiting), min(x.Least, o.Least)
				x.Caller, x.Thread = min(x.Caller, o.Caller), min(x.Thread, o.Thread)
			}
		}
		c.ranks.Add(r)
		for i, o := range ops {
			c.peers[i] = append(c.peers[i], rankPeer{r, o.Peer})
		}
		return true
	})
}

// Groups implements Merger: one answer per class of ranks, and the
// failures.
func (m *QueueClasses) Groups() []wire.Group {
	groups := m.failures.Groups()
	for _, c := range m.classes {
		set := c.ranks.Set()
		q := c.q
		q.Rank = set.Min()
		q.Ops = slices.Clone(q.Ops)
		for i := range q.Ops {
			o := &q.Ops[i]
			slices.SortFunc(c.peers[i], func(a, b rankPeer) int { return a.rank - b.rank })
			o.Peer = c.peers[i][0].peer
			if o.Peer >= 0 {
				o.Peers = runs(c.peers[i], q.Size)
			}
		}
		// Oldest first, as a rank tells them.
		slices.SortStableFunc(q.Ops, func(a, b wire.MPIOp) int { return int(b.Waiting - a.Waiting) })
		groups = append(groups, wire.Group{Ranks: set, Status: wire.StatusOK, Body: wire.MustEncode(q)})
	}
	slices.SortFunc(groups, func(a, b wire.Group) int { return a.Ranks.Min() - b.Ranks.Min() })
	return groups
}

// runs folds ranks' peers (ascending ranks) into the fewest runs a scan
// from the lowest rank finds: the same points give the same runs
// whatever order they were merged in.
func runs(points []rankPeer, size int) []wire.PeerRun {
	var out []wire.PeerRun
	for _, p := range points {
		if n := len(out); n > 0 {
			r := &out[n-1]
			if p.rank == r.From+r.Count {
				if r.Count == 1 {
					r.Step = offset(p.peer, r.Peer, size)
					r.Count++
					continue
				}
				if next := r.Peer + r.Count*r.Step; size > 0 && p.peer == next%size || p.peer == next {
					r.Count++
					continue
				}
			}
		}
		out = append(out, wire.PeerRun{From: p.rank, Count: 1, Peer: p.peer})
	}
	return out
}

// offset is how far peer lies after rank, round a world of size ranks
// when it is known; a peer that is no rank stays itself.
func offset(peer, rank, size int) int {
	if peer < 0 {
		return peer
	}
	if size <= 0 {
		return peer - rank
	}
	return ((peer-rank)%size + size) % size
}

// keyedOp is an op of one rank with what orders it among the rank's.
type keyedOp struct {
	key string // what it is
	off int    // its peer's offset from the rank
	op  wire.MPIOp
}

// opKey is what an op is but for what differs from rank to rank: its
// peer, wait, caller's address and thread id (where the call was made is
// part of it).
func opKey(o wire.MPIOp) string {
	return fmt.Sprintf("%s|%d|%d|%d|%d|%d|%d|%t|%s|%s|%d|%s", o.Call, o.Tag, o.Comm, o.CommSize, o.Count, o.Bytes,
		o.Root, o.Request, o.At.Func, o.At.File, o.At.Line, o.At.From)
}

// peerKind is what a peer adds to what an op is: whether it is a rank,
// or which of the peers that are none (any source, none) it is.
func peerKind(peer int) string {
	if peer >= 0 {
		return "|rank"
	}
	return "|" + strconv.Itoa(peer)
}

// commsKey is what ranks with these queues share besides their ops: the
// world's size, where the queues were read, and the members of their
// communicators.
func commsKey(q wire.Queues) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d;%s", q.Size, q.Library)
	for _, id := range slices.Sorted(maps.Keys(q.Comms)) {
		fmt.Fprintf(&b, ";%d=%v", id, q.Comms[id])
	}
	return b.String()
}
