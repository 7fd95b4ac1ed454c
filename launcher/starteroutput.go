package launcher

import (
	"fmt"
	"sync"

	"github.com/sdm-hpc/sdm/internal/text"
	"github.com/sdm-hpc/sdm/wire"
)

// StarterOutput passes the lines a launched starter writes to the front
// end: a line labelled with its rank as that rank's output, so that it
// prints and merges as output does in every other mode; any other line
// as it is. Lines written before there is a session wait for it.
type StarterOutput struct {
	mu      sync.Mutex
	pending []StarterLine
	print   func(string)
	tree    OutputTree
}

// OutputTree is where a rank's output joins the session's events
// (client.Session).
type OutputTree interface {
	Size() int
	AddOutput(ranks wire.RankSet, out wire.Output) bool
}

// Line takes one line of the starter's (MPIR.Lines).
func (w *StarterOutput) Line(l StarterLine) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.print == nil {
		w.pending = append(w.pending, l)
		return
	}
	w.show(l)
}

// To sends the lines from now on, those that waited first: the labelled
// ones among tree's output, the others to print.
func (w *StarterOutput) To(print func(string), tree OutputTree) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.print, w.tree = print, tree
	for _, l := range w.pending {
		w.show(l)
	}
	w.pending = nil
}

func (w *StarterOutput) show(l StarterLine) {
	switch {
	case l.Rank < 0:
		w.print(text.Printable(l.Text, false))
	case l.Rank >= w.tree.Size() || !w.tree.AddOutput(wire.Single(l.Rank), wire.Output{Stream: l.Stream, Text: l.Text + "\n"}):
		// Too late for the session's events: printed alone.
		w.print(fmt.Sprintf("[%d] %s", l.Rank, text.Printable(l.Text, true)))
	}
}
