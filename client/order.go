package client

import (
	"sync"

	"github.com/sdm-hpc/sdm/wire"
)

// order puts a rank's stop or exit after the output the rank wrote before
// it. The two travel on separate streams, so that a flood of output never
// delays news: a stop can arrive long before output that a slow reader
// has not taken yet. Each rank's server puts a mark in the output stream
// after the output that came before each stop or exit
// (wire.EventOutputMark); order holds a stop or exit back until the
// mark of every one of its ranks has arrived, and holds the later news of
// those ranks behind it, so that each rank's news keeps its order. A rank
// whose server is lost sends no more marks: its news is let go.
type order struct {
	mu sync.Mutex
	// marks counts, per rank, the marks arrived and not yet matched with
	// a stop or exit (a mark may come first).
	marks []int32
	gone  wire.RankSet // ranks whose servers are lost
	held  []Event
	// changed is closed and replaced whenever held events are let go.
	changed chan struct{}
}

func newOrder(size int) *order {
	return &order{marks: make([]int32, size), changed: make(chan struct{})}
}

// news takes an event of the control stream and returns the events that
// may be queued now, in order: it, unless it waits for marks or behind
// news of its ranks that does.
func (o *order) news(ev Event) []Event {
	switch ev.Op {
	case wire.EventLost:
		o.gone = o.gone.Union(ev.Group.Ranks)
	case wire.EventConnected:
		// A server that joins again starts afresh.
		o.gone = o.gone.Minus(ev.Group.Ranks)
		o.each(ev.Group.Ranks, func(r int) { o.marks[r] = 0 })
	}
	if len(o.held) == 0 && o.ready(ev) {
		o.consume(ev)
		return []Event{ev}
	}
	o.held = append(o.held, ev)
	return o.release()
}

// mark takes a mark of the output stream and returns the events it lets go.
func (o *order) mark(ranks wire.RankSet) []Event {
	o.each(ranks, func(r int) { o.marks[r]++ })
	return o.release()
}

// end returns every held event: the session is over, no mark will come.
func (o *order) end() []Event {
	held := o.held
	o.held = nil
	if len(held) > 0 {
		o.signal()
	}
	return held
}

// holds reports whether news of any of ranks is held back.
func (o *order) holds(ranks wire.RankSet) bool {
	for _, ev := range o.held {
		if ev.Group.Ranks.Intersects(ranks) {
			return true
		}
	}
	return false
}

// release lets go, in order, every held event whose marks have arrived and
// that no earlier held event of its ranks holds back.
func (o *order) release() []Event {
	var out []Event
	var blocked wire.RankSet
	kept := o.held[:0]
	for _, ev := range o.held {
		if !ev.Group.Ranks.Intersects(blocked) && o.ready(ev) {
			o.consume(ev)
			out = append(out, ev)
			continue
		}
		blocked = blocked.Union(ev.Group.Ranks)
		kept = append(kept, ev)
	}
	clear(o.held[len(kept):])
	o.held = kept
	if len(out) > 0 {
		o.signal()
	}
	return out
}

// ready reports whether ev waits for no mark: it is no stop or exit, or
// the mark of each of its ranks has arrived (or its server is gone).
func (o *order) ready(ev Event) bool {
	if !marked(ev.Op) {
		return true
	}
	ok := true
	o.each(ev.Group.Ranks.Minus(o.gone), func(r int) {
		if o.marks[r] <= 0 {
			ok = false
		}
	})
	return ok
}

// consume matches a ready stop or exit with the marks it waited for.
func (o *order) consume(ev Event) {
	if marked(ev.Op) {
		o.each(ev.Group.Ranks.Minus(o.gone), func(r int) { o.marks[r]-- })
	}
}

// marked reports whether the servers put a mark in the output stream for
// news called op.
func marked(op string) bool { return op == wire.EventStopped || op == wire.EventExited }

// each calls fn for every rank of ranks that the job has; a master that
// names others is ignored for them.
func (o *order) each(ranks wire.RankSet, fn func(r int)) {
	ranks.Each(func(r int) bool {
		if r >= len(o.marks) {
			return false
		}
		fn(r)
		return true
	})
}

// signal wakes whoever waits for held news. o.mu is held.
func (o *order) signal() {
	close(o.changed)
	o.changed = make(chan struct{})
}
