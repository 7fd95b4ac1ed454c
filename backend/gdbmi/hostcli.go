package gdbmi

import (
	"context"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// A CLI command of a rank's (-interpreter-exec console) acts on gdb as a
// whole, where an MI command of the view's is aimed at the rank's
// inferior: what gdb says while it runs is the command's. A thread or a
// frame it selects (up, frame, thread) is the rank's, where its next
// command goes; a breakpoint or a catchpoint it makes (=breakpoint-created)
// is the rank's alone, numbered as the rank's, kept to its inferior.

// created is a breakpoint a CLI command made: gdb's number, its
// condition, and the token of the command (Record.During).
type created struct {
	id      int
	cond    string
	fortran bool // in Fortran code (fortranAt)
	during  uint64
}

// rankCLI runs a CLI command of the rank's, once gdb's records printed
// before its answer have been routed.
func (v *view) rankCLI(ctx context.Context, command, cli string) (Record, string, error) {
	r, out, err := v.aimed(ctx, command)
	wait, cancel := context.WithTimeout(ctx, viewTimeout)
	v.h.g.WaitHandled(wait, v.h.g.Mark())
	cancel()
	if selects(cli) {
		v.mu.Lock()
		v.listNext = 0 // the frame was shown
		v.mu.Unlock()
	}
	if !r.HasTok {
		return r, out, err // no answer: gdb ended, or ctx did
	}
	if cerr := v.claim(ctx, r.Token); cerr != nil && err == nil {
		err = cerr
	}
	return r, out, err
}

// claim makes the rank's the breakpoints its CLI command (token) made.
func (v *view) claim(ctx context.Context, token uint64) error {
	v.h.breaks.Lock()
	defer v.h.breaks.Unlock()
	v.h.mu.Lock()
	var mine []created
	v.h.created = slices.DeleteFunc(v.h.created, func(c created) bool {
		if c.during == token {
			mine = append(mine, c)
			return true
		}
		return false
	})
	v.h.mu.Unlock()
	for _, c := range mine {
		p := &hostPoint{id: c.id, cond: c.cond, views: map[*view]bool{v: true}, fortran: c.fortran}
		v.h.addPoint(p)
		v.number(c.id)
		if err := v.h.recondition(ctx, p); err != nil {
			return err
		}
	}
	return nil
}

// selects says whether a CLI command selects a thread or a frame.
func selects(command string) bool {
	w := strings.Fields(command)
	return len(w) > 0 && slices.Contains([]string{"up", "down", "frame", "f", "thread", "t", "select-frame", "up-silently", "down-silently"}, w[0])
}

// gdb keeps the line a list goes on from per program space (an
// inferior's), but whether a bare list centres on the line of the frame
// last shown or goes on from there for gdb as a whole: after another
// rank's list, a rank's first list would not centre; after another rank's
// frame was shown, its next list would centre again. A view keeps that
// for its rank (listNext).

// lists says whether a CLI command is list, bare or with a place.
func lists(command string) bool {
	w := strings.Fields(command)
	return len(w) > 0 && (w[0] == "list" || w[0] == "l") && (len(w) == 1 || w[1] != "-")
}

// list runs a list of the rank's: a bare one (or "list +") centres on
// the selected frame's line first, and goes on from the rank's last line
// listed after that; one with a place lists there. Either way the rank's
// next bare list goes on after the last line listed.
func (v *view) list(ctx context.Context, command string) (Record, string, error) {
	// Another rank's list between the frame shown and this list would
	// have gdb go on from there instead of centring.
	v.h.listing.Lock()
	defer v.h.listing.Unlock()
	w := strings.Fields(command)
	if len(w) == 1 || (len(w) == 2 && w[1] == "+") {
		v.mu.Lock()
		next := v.listNext
		v.mu.Unlock()
		if next > 0 {
			command = "list " + strconv.Itoa(next) + ","
		} else {
			// The frame shown again, its text dropped, has gdb centre
			// the list on its line. (No frame: gdb lists around main.)
			v.aimed(ctx, "-interpreter-exec console "+Quote("frame"))
		}
	}
	r, out, err := v.aimed(ctx, "-interpreter-exec console "+Quote(command))
	if last := lastListed(out); last > 0 {
		v.mu.Lock()
		v.listNext = last + 1
		v.mu.Unlock()
	}
	return r, out, err
}

// listedLine is a line of source as list prints it: its number, a tab.
var listedLine = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?m)^(\d+)\t`) })

// lastListed is the number of the last source line in a list's output, 0
// for none.
func lastListed(out string) int {
	m := listedLine().FindAllStringSubmatch(out, -1)
	if len(m) == 0 {
		return 0
	}
	n, _ := strconv.Atoi(m[len(m)-1][1])
	return n
}
