package gdbmi

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sdm-hpc/sdm/backend"
	"github.com/sdm-hpc/sdm/dlopen"
	"github.com/sdm-hpc/sdm/wire"
)

// Backend is the gdb of one rank.
type Backend struct {
	cfg    backend.Config
	events chan backend.Event
	queue  queue
	wg     sync.WaitGroup

	mu  sync.Mutex
	gdb *GDB
	// watched is closed once the watcher of gdb has reported its end.
	watched <-chan struct{}
	term    *terminal
	out     *output
	state   wire.State
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
	exiting   bool // the end is being reported (exited)
	// announcing counts stops and ends sent as events whose state is
	// not set yet: status waits for them, so that it never contradicts
	// news that went out before it.
	announcing int
	closed     bool
	// The process itself (process.go): proc is watched for its end;
	// lastPid names the last one in the words about its death; gone: it
	// ended, and gdb's records about it are stale until a new one starts;
	// ending: a command that may end it runs, and deferred is a death it
	// met; untold: it died without gdb's noticing, and gdb is to let go
	// of it before its next command.
	proc         *process
	lastPid      int
	gone, ending bool
	deferred     *death
	untold       bool
	// going is what the next *running record reports, set by the command
	// that sets the process going: a step keeps its op and the frame it
	// started from, so that status says what a rank that does not come
	// back is doing. Taken by that record; empty means plain running.
	going wire.State

	// Libraries the program loads (solib.go).
	dl      dlopen.Setting
	solib   solibVars  // gdb's settings as they stand
	solibMu sync.Mutex // held while they change
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
}

// ErrClosed answers commands that arrive after Close.
var ErrClosed = errors.New("debugger closed")

// New returns the backend of rank cfg.Rank. gdb itself starts with the
// first start command, so that a missing gdb is reported as that command's
// answer, naming the rank, instead of killing the server.
func New(cfg backend.Config) *Backend {
	b := &Backend{
		cfg:     cfg,
		events:  make(chan backend.Event, 256),
		state:   wire.State{State: wire.StateNotStarted},
		changed: make(chan struct{}),
		dl:      dlopen.Default(),
	}
	b.queue.init()
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		b.work()
	}()
	return b
}

// Events implements backend.Backend.
func (b *Backend) Events() <-chan backend.Event { return b.events }

// Do implements backend.Backend: it decodes the body at once, and runs
// the op's method (backend.Ops) in the queue, or at once for status and
// halt.
func (b *Backend) Do(ctx context.Context, op string, body []byte, done func([]byte, error)) {
	call, err := backend.Decode(op, body)
	switch {
	case err != nil:
		done(nil, err)
	case op == wire.OpStatus || op == wire.OpHalt:
		done(call(ctx, b))
	case !b.queue.push(job{ctx: ctx, call: call, done: done}):
		done(nil, ErrClosed)
	}
}

// Close ends gdb, which kills the program it started and lets go of one
// it attached to (unless that is to end with the session too), and stops
// the backend; Events is closed once everything has stopped.
func (b *Backend) Close() error {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return nil
	}
	b.closed = true
	g, term, out, kill := b.gdb, b.term, b.out, b.attached && b.killOnClose
	b.mu.Unlock()
	b.unwatch()
	out.stop()
	if g != nil && kill {
		ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
		g.Run(ctx, "-interpreter-exec console kill")
		cancel()
	}
	b.queue.close()
	if g != nil {
		g.Close()
	}
	if term != nil {
		term.Close()
	}
	b.wg.Wait()
	close(b.events)
	return nil
}

// job is a command in the queue; one without a call is the backend's
// own tidying (tidy), which runs before every command anyway.
type job struct {
	ctx  context.Context
	call backend.Call
	done func([]byte, error)
}

func (b *Backend) work() {
	for {
		j, ok := b.queue.pop()
		if !ok {
			return
		}
		if err := j.ctx.Err(); err != nil {
			j.done(nil, err)
			continue
		}
		b.tidy()
		if j.call != nil {
			j.done(j.call(j.ctx, b))
		}
	}
}

// emit sends an event up unless the backend is closing, or attaching.
func (b *Backend) emit(op string, body []byte) { b.send(backend.Event{Op: op, Body: body}) }

// send is emit for a whole event; it says whether the event went up.
func (b *Backend) send(ev backend.Event) bool {
	b.mu.Lock()
	quiet := b.closed || b.attaching
	b.mu.Unlock()
	if !quiet {
		b.events <- ev
	}
	return !quiet
}

func (b *Backend) status() (wire.State, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	deadline := time.After(announceWait)
	for b.announcing > 0 {
		changed := b.changed
		b.mu.Unlock()
		select {
		case <-changed:
		case <-deadline:
			b.mu.Lock()
			return wire.State{}, fmt.Errorf("rank %d: news of the process was not sent within %v", b.cfg.Rank, announceWait)
		}
		b.mu.Lock()
	}
	if b.gdb != nil {
		select {
		case <-b.gdb.Done():
			return wire.State{}, b.gdb.Err()
		default:
		}
	}
	return b.state, nil
}

// announceWait bounds status's wait for news on its way up: a node that
// reads no events for that long is stuck.
const announceWait = 10 * time.Second

// halt interrupts a running program with SIGINT, as a terminal's ^C
// would, but aimed at the main thread (whose thread id is the process id):
// an MPI program has progress threads, and a stop in one of those would
// show where the library waits instead of where the program is. It works
// while gdb is busy; the stop arrives as an event.
func (b *Backend) halt() (wire.State, error) {
	b.mu.Lock()
	state, pid := b.state, b.pid
	b.mu.Unlock()
	if state.State == wire.StateRunning && pid > 0 {
		if err := unix.Tgkill(pid, pid, unix.SIGINT); err != nil {
			return wire.State{}, fmt.Errorf("interrupt process %d: %w", pid, err)
		}
	}
	return state, nil
}

// setState records the process state as gdb reported it; whatever it is,
// the process is no longer held at a load.
func (b *Backend) setState(st wire.State) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.state, b.held = st, false
	b.report()
}

// report counts a state reported and wakes whoever waits for one; b.mu
// is held.
func (b *Backend) report() {
	b.reported++
	close(b.changed)
	b.changed = make(chan struct{})
}

// queue is the FIFO of commands waiting for gdb: unbounded, so that Do
// never blocks the node that calls it.
type queue struct {
	mu     sync.Mutex
	jobs   []job
	closed bool
	wake   chan struct{}
}

func (q *queue) init() { q.wake = make(chan struct{}, 1) }

func (q *queue) push(j job) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return false
	}
	q.jobs = append(q.jobs, j)
	select {
	case q.wake <- struct{}{}:
	default:
	}
	return true
}

func (q *queue) close() {
	q.mu.Lock()
	q.closed = true
	left := q.jobs
	q.jobs = nil
	close(q.wake)
	q.mu.Unlock()
	for _, j := range left {
		j.done(nil, ErrClosed)
	}
}

func (q *queue) pop() (job, bool) {
	for {
		q.mu.Lock()
		if len(q.jobs) > 0 {
			j := q.jobs[0]
			q.jobs = q.jobs[1:]
			q.mu.Unlock()
			return j, true
		}
		closed := q.closed
		q.mu.Unlock()
		if closed {
			return job{}, false
		}
		<-q.wake
	}
}

var _ backend.Ops = (*Backend)(nil)
