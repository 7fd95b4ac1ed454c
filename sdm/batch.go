package sdm

import (
	"sync"
	"time"

	"github.com/sdm-hpc/sdm/op"
	"github.com/sdm-hpc/sdm/wire"
)

// maxBatch bounds how many distinct groups wait in one batch before it is
// sent regardless of the window.
const maxBatch = 1024

// batcher gathers the events going up one stream and sends them in
// batches. Within the window, an event merges into an earlier group of
// the same event, as the event's fold in the op table says (identical
// bodies, today), as long as no later group holds any of its ranks, so
// every rank's events keep their order while the same news from many
// ranks travels as one group.
//
// A batch that already speaks for every rank below this node goes at once:
// nothing else could merge into it, so waiting would only add latency (a
// breakpoint hit by all ranks, or a subtree that has fully connected,
// crosses each level without waiting for the window).
type batcher struct {
	window time.Duration // 0: send every event at once
	reach  wire.RankSet  // every rank this node speaks for
	send   func(*wire.Message)

	mu      sync.Mutex
	event   string
	fold    op.Fold // the event's
	groups  []wire.Group
	covered wire.RankSet // the ranks of groups
	timer   *time.Timer
}

func newBatcher(window time.Duration, reach wire.RankSet, send func(*wire.Message)) *batcher {
	return &batcher{window: window, reach: reach, send: send}
}

// add queues an event; it may send, and then blocks until the send is done.
func (b *batcher) add(event string, g wire.Group) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if event != b.event || b.fold == nil {
		b.flushLocked()
		b.event, b.fold = event, op.EventFold(event)
	}
	b.groups = appendEvent(b.groups, g, b.fold)
	b.covered = b.covered.Union(g.Ranks)
	switch {
	case b.window == 0 || len(b.groups) >= maxBatch || b.reach.Minus(b.covered).Empty():
		b.flushLocked()
	case b.timer == nil:
		b.timer = time.AfterFunc(b.window, b.flush)
	}
}

// appendEvent adds g to groups of one event in the order they go up: it
// folds into the latest group it can join without passing a group that
// holds any of its ranks, or goes at the end.
func appendEvent(groups []wire.Group, g wire.Group, fold op.Fold) []wire.Group {
	for j := len(groups) - 1; j >= 0; j-- {
		if groups[j].Ranks.Intersects(g.Ranks) {
			break
		}
		if fold(&groups[j], g) {
			return groups
		}
	}
	return append(groups, g)
}

func (b *batcher) flush() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.flushLocked()
}

// flushLocked sends the batch while holding the lock, which is what keeps
// batches in order.
func (b *batcher) flushLocked() {
	if b.timer != nil {
		b.timer.Stop()
		b.timer = nil
	}
	if len(b.groups) == 0 {
		return
	}
	m := &wire.Message{Kind: wire.KindEvent, Op: b.event, Groups: b.groups}
	b.groups, b.covered = nil, wire.RankSet{}
	b.send(m)
}
