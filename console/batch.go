package console

import (
	"github.com/sdm-hpc/sdm/client"
	"github.com/sdm-hpc/sdm/wire"
)

// printLimit bounds the program output a batch gathers: a batch that
// holds this much prints at once, before its window ends, and while a
// wait holds the news back its output prints anyway. So the console keeps
// a bounded amount of output however fast the ranks write, and a slow
// terminal slows the ranks down instead of filling memory.
const printLimit = 1 << 20

// syncLimit bounds the output that a Sync prints before it returns: what
// the front end held when it was asked, not what a flood brings while it
// prints.
const syncLimit = 4 << 20

// batch is the news gathered over a display window, merged in order per
// rank.
type batch struct {
	events []client.Event
	output int // bytes of program output in events
}

func (b *batch) add(ev client.Event) {
	n := len(b.events)
	b.events = wire.AppendMerged(b.events, ev, eventRanks, sameEvent, outputBeforeEnd)
	if len(b.events) > n && ev.Op == wire.EventOutput {
		b.output += len(ev.Group.Body)
	}
}

func (b *batch) empty() bool { return len(b.events) == 0 }

// full reports whether the batch holds as much output as it may.
func (b *batch) full() bool { return b.output >= printLimit }

// take empties the batch and returns what it held.
func (b *batch) take() []client.Event {
	events := b.events
	*b = batch{}
	return events
}

// takeOutput takes out the output that may print while the rest of the
// news is held: every piece that no stop or exit of its ranks comes
// before in the batch. The output a rank wrote before it stopped comes
// before the stop (the client sees to that), so what is left behind is
// only output of ranks that ran again.
func (b *batch) takeOutput() []client.Event {
	var out []client.Event
	var stopped wire.RankSet
	kept := b.events[:0]
	b.output = 0
	for _, ev := range b.events {
		switch {
		case ev.Op == wire.EventOutput && !ev.Group.Ranks.Intersects(stopped):
			out = append(out, ev)
			continue
		case ev.Op == wire.EventOutput:
			b.output += len(ev.Group.Body)
		case ev.Op == wire.EventStopped || ev.Op == wire.EventExited:
			stopped = stopped.Union(ev.Group.Ranks)
		}
		kept = append(kept, ev)
	}
	clear(b.events[len(kept):])
	b.events = kept
	return out
}
