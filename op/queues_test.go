package op

import (
	"bytes"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/sdm-hpc/sdm/wire"
)

// mergeTree merges one answer per rank (answer's) through a tree of
// mergers of the given fan-in, the ranks arriving in the order perm
// gives, as the nodes of sdm's tree would merge them.
func mergeTree(newMerger func() Merger, answer func(rank int) []byte, n, fanin int, perm []int) []wire.Group {
	var level [][]wire.Group
	for i := 0; i < n; i += fanin {
		m := newMerger()
		for _, r := range perm[i:min(i+fanin, n)] {
			m.Add(wire.Single(r), wire.StatusOK, answer(r))
		}
		level = append(level, m.Groups())
	}
	for len(level) > 1 {
		var next [][]wire.Group
		for i := 0; i < len(level); i += fanin {
			m := newMerger()
			for _, gs := range level[i:min(i+fanin, len(level))] {
				for _, g := range gs {
					m.Add(g.Ranks, g.Status, g.Body)
				}
			}
			next = append(next, m.Groups())
		}
		level = next
	}
	return level[0]
}

// mergeQueues merges each rank's queues through a tree of mergers.
func mergeQueues(t *testing.T, of func(rank int) wire.Queues, n, fanin int, perm []int) []wire.Group {
	t.Helper()
	return mergeTree(func() Merger { return &QueueClasses{} }, func(r int) []byte { return wire.MustEncode(of(r)) }, n, fanin, perm)
}

// unfold is each rank's queues as the front end reads the groups.
func unfold(t *testing.T, groups []wire.Group) map[int]wire.Queues {
	t.Helper()
	out := map[int]wire.Queues{}
	for _, g := range groups {
		q, err := Queues.DecodeAnswer(g.Body)
		if err != nil || g.Status != wire.StatusOK {
			t.Fatalf("group %v: %v %s", g.Ranks, err, g.Body)
		}
		g.Ranks.Each(func(r int) bool {
			out[r] = q.Of(r)
			return true
		})
	}
	return out
}

func TestQueueClassesFoldARingIntoOneRun(t *testing.T) {
	const n = 1024
	ring := func(r int) wire.Queues {
		return wire.Queues{Rank: r, Size: n, Ops: []wire.MPIOp{{Call: "MPI_Send", Peer: (r + 1) % n, Tag: 7, Count: 1 << 20,
			Bytes: 8 << 20, Root: wire.NoRank, Waiting: time.Duration(r) * time.Millisecond, Least: time.Duration(r) * time.Millisecond,
			Caller: 0x1000}}}
	}
	perm := rand.New(rand.NewPCG(1, 2)).Perm(n)
	groups := mergeQueues(t, ring, n, 4, perm)
	if len(groups) != 1 || !groups[0].Ranks.Equal(wire.All(n)) {
		t.Fatalf("want one group of every rank, got %d: %v", len(groups), groups)
	}
	q, _ := Queues.DecodeAnswer(groups[0].Body)
	o := q.Ops[0]
	if len(o.Peers) != 1 || o.Peers[0] != (wire.PeerRun{From: 0, Count: n, Peer: 1, Step: 1}) {
		t.Errorf("peers: want one run of %d from 0 to 1 by 1, got %v", n, o.Peers)
	}
	if o.Least != 0 || o.Waiting != (n-1)*time.Millisecond {
		t.Errorf("waits: want 0 to %v, got %v to %v", (n-1)*time.Millisecond, o.Least, o.Waiting)
	}
	small := mergeQueues(t, ring, 64, 4, rand.New(rand.NewPCG(1, 2)).Perm(64))
	if d := len(groups[0].Body) - len(small[0].Body); len(small) != 1 || d > 8 {
		t.Errorf("a ring of %d ranks takes %d bytes, of 64 ranks %d: it should not grow with the ranks but in its numbers",
			n, len(groups[0].Body), len(small[0].Body))
	}
	for r, q := range unfold(t, groups) {
		if q.Rank != r || q.Ops[0].Peer != (r+1)%n || q.Ops[0].Peers != nil {
			t.Fatalf("rank %d unfolds as %+v", r, q)
		}
	}
}

func TestQueueClassesKeepEveryPeerWhateverTheOrder(t *testing.T) {
	const n = 300
	rng := rand.New(rand.NewPCG(3, 4))
	peers := make([][2]int, n)
	for r := range peers {
		peers[r] = [2]int{rng.IntN(n), rng.IntN(n)}
	}
	roots := func(r int) wire.Queues {
		// Most ranks receive from rank 0, a few from any rank; every rank
		// has two sends posted, to peers of no pattern, and its waits in
		// an order of its own.
		recv := wire.MPIOp{Call: "MPI_Recv", Peer: 0, Tag: 1, Root: wire.NoRank, Waiting: time.Second, Least: time.Second}
		if r%50 == 0 {
			recv.Peer = wire.AnySource
		}
		a := wire.MPIOp{Call: "MPI_Isend", Peer: peers[r][0], Request: true, Root: wire.NoRank, Waiting: time.Duration(r)}
		b := a
		b.Peer, b.Waiting = peers[r][1], time.Duration(n-r)
		ops := []wire.MPIOp{recv, a, b}
		slices.SortFunc(ops, func(x, y wire.MPIOp) int { return int(y.Waiting - x.Waiting) })
		return wire.Queues{Rank: r, Size: n, Ops: ops}
	}
	var first []wire.Group
	for i, fanin := range []int{2, 3, 32} {
		groups := mergeQueues(t, roots, n, fanin, rand.New(rand.NewPCG(uint64(i), 5)).Perm(n))
		if first == nil {
			first = groups
		} else if !slices.EqualFunc(first, groups, func(a, b wire.Group) bool {
			return a.Ranks.Equal(b.Ranks) && bytes.Equal(a.Body, b.Body)
		}) {
			t.Fatalf("fan-in %d merged otherwise than fan-in 2: %d against %d groups", fanin, len(groups), len(first))
		}
		for r, q := range unfold(t, groups) {
			want := roots(r)
			got := map[int]int{}
			for _, o := range q.Ops {
				got[o.Peer]++
			}
			for _, o := range want.Ops {
				got[o.Peer]--
			}
			for p, c := range got {
				if c != 0 {
					t.Fatalf("fan-in %d: rank %d's peers: %v, want those of %v (peer %d off by %d)", fanin, r, q.Ops, want.Ops, p, c)
				}
			}
		}
	}
	if len(first) != 2 {
		t.Errorf("want two classes (from rank 0, from any rank), got %d", len(first))
	}
}

func TestQueueClassesMergeFailuresApart(t *testing.T) {
	var m QueueClasses
	m.Add(wire.Range(2, 3), wire.StatusError, []byte("no MPI operations recorded"))
	m.Add(wire.Single(0), wire.StatusOK, wire.MustEncode(wire.Queues{Size: 4}))
	m.Add(wire.Single(1), wire.StatusOK, []byte{0xc1})
	m.Add(wire.Single(4), wire.StatusError, []byte("no MPI operations recorded"))
	groups := m.Groups()
	want := []string{"0", "1", "2-4"}
	if len(groups) != len(want) {
		t.Fatalf("want groups %v, got %v", want, groups)
	}
	for i, g := range groups {
		if g.Ranks.String() != want[i] {
			t.Errorf("group %d: want ranks %s, got %v", i, want[i], g.Ranks)
		}
	}
}

// FuzzQueueClasses merges whatever a child sends as queues: no panic, and
// every rank it named answers once.
func FuzzQueueClasses(f *testing.F) {
	f.Add([]byte{0xc1}, uint8(3), uint8(2))
	f.Add(wire.MustEncode(wire.Queues{Size: 8, Ops: []wire.MPIOp{{Call: "MPI_Send", Peer: 1,
		Peers: []wire.PeerRun{{From: 0, Count: 8, Peer: 1, Step: 1}}}}}), uint8(0), uint8(8))
	f.Add(wire.MustEncode(wire.Queues{Size: -3, Ops: []wire.MPIOp{{Peer: 5,
		Peers: []wire.PeerRun{{From: 9, Count: -2, Peer: 1, Step: -7}, {From: 0, Count: 1 << 40}}}}}), uint8(1), uint8(4))
	f.Fuzz(func(t *testing.T, body []byte, low, n uint8) {
		ranks := wire.Range(int(low), int(low)+int(n%64))
		var m QueueClasses
		m.Add(ranks, wire.StatusOK, body)
		m.Add(wire.Single(300), wire.StatusOK, body)
		var got wire.Builder
		count := 0
		for _, g := range m.Groups() {
			got.AddSet(g.Ranks)
			count += g.Ranks.Count()
		}
		want := ranks.Union(wire.Single(300))
		if !got.Set().Equal(want) || count != want.Count() {
			t.Fatalf("ranks %v answered as %v (%d answers)", want, got.Set(), count)
		}
	})
}
