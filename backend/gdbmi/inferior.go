package gdbmi

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/sdm-hpc/sdm/dlopen"
	"github.com/sdm-hpc/sdm/wire"
)

// inferior is the rank's program as gdb's records and the backend's own
// commands tell it: its state (not started, running, stopped, exited,
// held at a load), its process, and what its library loads do. One lock,
// mu, guards every field, and is never held while gdb runs a command:
// a change is read, gdb asked, and the answer written back, with
// reported telling whether gdb said something meanwhile.
type inferior struct {
	mu    sync.Mutex
	state wire.State
	// reported counts the states gdb reported, so that a command that set
	// the program going can tell whether gdb has said anything since.
	reported int
	changed  chan struct{} // closed and replaced at each report
	pid      int           // the program's process, while there is one
	// attached: the process was running before gdb took it (attach);
	// killOnClose: it ends with the session all the same.
	attached, killOnClose bool
	// attaching: the stops on the way are the attach command's answer,
	// not news.
	attaching bool
	// peeking: a where of a running rank stops it for its stack and lets
	// it go on; neither is news (peek.go).
	peeking bool
	// lookHanded, while a look waits for its interrupt's stop, hands it
	// a pass through a tracepoint instead (cause errHanded);
	// lateInterrupt is when one was: the interrupt may still stop the
	// rank after the look let it go on (gdb in all-stop mode signals the
	// process), and such a stop soon after is the look's, no news.
	lookHanded    context.CancelCauseFunc
	lateInterrupt time.Time
	exiting       bool // the end is being reported (exited)
	// announcing counts stops and ends sent as events whose state is
	// not set yet: status waits for them, so that it never contradicts
	// news that went out before it.
	announcing int
	// going is what the next *running record reports, set by the command
	// that sets the process going: a step keeps its op and the frame it
	// started from, so that status says what a rank that does not come
	// back is doing. Taken by that record; empty means plain running.
	going wire.State

	// The process itself (process.go): proc is watched for its end;
	// lastPid names the last one in the words about its death; gone: it
	// ended, and gdb's records about it are stale until a new one starts;
	// ending: a command that may end it runs, and deferred is a death it
	// met; untold: the pid of one that died without gdb's noticing, which
	// gdb is to let go of before its next command (0: none).
	proc         *process
	lastPid      int
	gone, ending bool
	deferred     *death
	untold       int

	// Libraries the program loads (solib.go).
	dl    dlopen.Setting
	solib solibVars // gdb's settings as they stand
	// started: the libraries the program started with have been read;
	// unread: gdb announced libraries whose symbols it has not read;
	// held: stopped at a reported load until the front end's OpPlant;
	// stepping: the process was last set going by a step.
	started, unread, held, stepping bool
	// pending: an enabled breakpoint waits for a library, as last listed
	// (kept in auto mode only, which depends on it).
	pending   bool
	quietRuns int // *running records of the backend's own continues: no news
	// loadStops counts the stops at loads, what the modes differ in.
	loadStops int
	// cuda is the CUDA driver's path once loaded; cudaWarned says the
	// current setting has been warned about leaving it out.
	cuda       string
	cudaWarned bool
	// softWatchWarned says the rank was told its watchpoints are
	// software ones.
	softWatchWarned bool
	tracepoints     // (trace.go)
}

// newInferior is a program not loaded yet, with the default dlopen
// setting.
func newInferior() inferior {
	return inferior{
		state:   wire.State{State: wire.StateNotStarted},
		changed: make(chan struct{}),
		dl:      dlopen.Default(),
	}
}

// setState records the process state as gdb reported it; whatever it is,
// the process is no longer held at a load.
func (p *inferior) setState(st wire.State) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.state, p.held = st, false
	p.report()
}

// report counts a state reported and wakes whoever waits for one; p.mu
// is held.
func (p *inferior) report() {
	p.reported++
	close(p.changed)
	p.changed = make(chan struct{})
}

// reports is how many states gdb has reported so far.
func (p *inferior) reports() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.reported
}

// waitStop waits until gdb reports, after its since-th report, that the
// process stopped or ended.
func (p *inferior) waitStop(ctx context.Context, since int) (wire.State, error) {
	for {
		p.mu.Lock()
		st, changed := p.state, p.changed
		done := p.reported != since && st.State != wire.StateRunning
		p.mu.Unlock()
		if done {
			return st, nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return st, fmt.Errorf("gdb reported no stop: %w", ctx.Err())
		}
	}
}

// setGoing says what the next *running record reports.
func (p *inferior) setGoing(st wire.State) {
	p.mu.Lock()
	p.going = st
	p.mu.Unlock()
}

// setAttaching says whether the stops on the way are an attach
// command's answer, and no news.
func (p *inferior) setAttaching(on bool) {
	p.mu.Lock()
	p.attaching = on
	p.mu.Unlock()
}
