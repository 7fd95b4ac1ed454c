package launcher

import (
	"fmt"
	"io"
	"log"
)

// ProgressLine shows how a job comes up on one line of a terminal,
// rewritten in place ("connected 812/1024"), and nothing elsewhere.
type ProgressLine struct {
	w     io.Writer
	on    bool
	shown bool
}

// NewProgressLine writes to w when it is a terminal.
func NewProgressLine(w io.Writer, terminal bool) *ProgressLine {
	return &ProgressLine{w: w, on: terminal}
}

// Show shows the steps that count ranks.
func (p *ProgressLine) Show(step Progress) {
	if !p.on {
		return
	}
	var text string
	switch step.Stage {
	case StageSubmitted:
		text = fmt.Sprintf("submitted %d ranks", step.Total)
	case StagePublished:
		text = fmt.Sprintf("published %d/%d", step.Done, step.Total)
	case StageConnected:
		text = fmt.Sprintf("connected %d/%d", step.Done, step.Total)
	default:
		return
	}
	fmt.Fprintf(p.w, "\r\033[K%s", text)
	p.shown = true
}

// Clear removes the line once the job is up (or failed).
func (p *ProgressLine) Clear() {
	if p.shown {
		fmt.Fprint(p.w, "\r\033[K")
	}
}

// Narrator tells how a job comes up, as sdm's front end does: on lines
// of their own, the adapter when sdm chose it or added to the user's
// choice ("using"), the starter it starts when Starter is set or the
// adapter was told, and the ranks acquired; the steps that count ranks
// on the progress line.
type Narrator struct {
	*ProgressLine
	Log     *log.Logger
	Starter bool
}

// Step tells step; it is an Options.Progress.
func (n *Narrator) Step(step Progress) {
	switch step.Stage {
	case StageUsing:
		if step.Why != "" {
			n.Log.Print("using ", step.Text)
			n.Starter = true
		}
	case StageStarting:
		if n.Starter {
			n.Log.Print("starting ", step.Text)
		}
	case StageAcquired:
		n.Clear()
		n.Log.Print("acquired ", step.Text)
	}
	n.Show(step)
}
