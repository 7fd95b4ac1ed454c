package console

import (
	"fmt"
	"time"

	"github.com/sdm-hpc/sdm/wire"
)

// Notes are the console's own word about ranks, where no rank answered:
// which still run after a wait, which a ^C left running or halts. In JSON
// each is an object with a note field (still-running, interrupted,
// halting), the command it is about, and the ranks.

// stepHint is what a step that does not come back usually means in an
// MPI program.
const stepHint = "a call there may wait for other ranks (continue them, or halt)"

// stillRunning lists the ranks that still run after command waited for
// them, one line per thing they do: "[1-3] still running". after is how
// long the wait lasted when it ran out (a failure, which says so), 0 when
// it did not.
func (c *Console) stillRunning(command string, runs []running, after time.Duration) {
	if after > 0 {
		c.fail()
	}
	for _, r := range runs {
		text := "still running"
		if r.stepping() {
			text += " " + r.state.Reason + " from " + frameText(r.state.Frame)
		}
		if after > 0 {
			text += " after " + after.String()
			if r.stepping() {
				text += ": " + stepHint
			}
		}
		if !c.opts.JSON {
			c.println(c.block(r.ranks, after > 0, []string{text}))
			continue
		}
		obj := map[string]any{"ranks": r.ranks.String(), "count": r.ranks.Count(), "note": "still-running"}
		if r.stepping() {
			obj["step"], obj["from"] = r.state.Reason, frames([]wire.Frame{r.state.Frame})[0]
		}
		if after > 0 {
			obj["timed_out"], obj["after"] = true, after.Seconds()
			if r.stepping() {
				obj["hint"] = stepHint
			}
		}
		c.emit(obj)
	}
}

// interrupted says that a ^C ended command early: a wait leaves ranks
// still running (which), another command is abandoned on ranks (their
// answers, when they come, are dropped).
func (c *Console) interrupted(command string, ranks wire.RankSet, waiting bool) {
	if c.opts.JSON {
		obj := map[string]any{"ranks": ranks.String(), "count": ranks.Count(), "note": "interrupted"}
		if waiting {
			obj["still_running"] = true
		} else {
			obj["abandoned"] = true
		}
		c.emit(obj)
		return
	}
	switch {
	case !waiting:
		c.println("interrupted: " + command + " abandoned")
	case ranks.Empty():
		c.println("interrupted")
	default:
		c.println(fmt.Sprintf("interrupted: [%v] still running", ranks))
	}
}

// halting says that a ^C at the prompt halts ranks.
func (c *Console) halting(ranks wire.RankSet) {
	if c.opts.JSON {
		c.emit(map[string]any{"ranks": ranks.String(), "count": ranks.Count(), "note": "halting"})
		return
	}
	c.println(fmt.Sprintf("halting [%v]", ranks))
}
