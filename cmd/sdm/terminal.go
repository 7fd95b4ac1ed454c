package main

import (
	"fmt"
	"os"

	"github.com/sdm-hpc/sdm/console"
	"github.com/sdm-hpc/sdm/launcher"
)

// isTerminal reports whether f is a terminal.
var isTerminal = console.IsTerminal

// progress shows how a job comes up on one line of a terminal, rewritten
// in place ("connected 812/1024"), and nothing elsewhere.
type progress struct {
	on    bool
	shown bool
}

func newProgress(terminal bool) *progress { return &progress{on: terminal} }

func (p *progress) show(step launcher.Progress) {
	if !p.on {
		return
	}
	var text string
	switch step.Stage {
	case launcher.StageSubmitted:
		text = fmt.Sprintf("submitted %d ranks", step.Total)
	case launcher.StagePublished:
		text = fmt.Sprintf("published %d/%d", step.Done, step.Total)
	case launcher.StageConnected:
		text = fmt.Sprintf("connected %d/%d", step.Done, step.Total)
	default:
		return
	}
	fmt.Fprintf(os.Stderr, "\r\033[K%s", text)
	p.shown = true
}

// clear removes the progress line once the job is up (or failed).
func (p *progress) clear() {
	if p.shown {
		fmt.Fprint(os.Stderr, "\r\033[K")
	}
}
