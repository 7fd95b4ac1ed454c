package gdbmi

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sdm-hpc/sdm/backend"
	"github.com/sdm-hpc/sdm/backend/program"
	"github.com/sdm-hpc/sdm/internal/fifo"
	"github.com/sdm-hpc/sdm/member"
	"github.com/sdm-hpc/sdm/wire"
)

// Backend is the gdb of one rank: the MI process (GDB), the program's
// terminal and output, the command queue, and the program as they tell
// it (inferior, embedded), whose lock mu guards the fields below it too.
//
// Four kinds of goroutine act on it: the worker runs the queued commands
// one at a time (ops.go); the watcher turns gdb's records into state and
// events (events.go); the watch of a process reports its end
// (process.go); the pump sends the program's output (output.go). status
// and halt run on the node's goroutine. None holds mu while gdb runs a
// command.
type Backend struct {
	cfg    backend.Config
	events chan backend.Event
	// queue holds the commands waiting for gdb: unbounded, so that Do
	// never blocks the node that calls it.
	queue *fifo.Queue[job]
	wg    sync.WaitGroup
	// settling is held while gdb's load settings change (settle), so that
	// of the watcher's settle at a load and a command's after a new
	// breakpoint, the later one sees the later list.
	settling sync.Mutex
	// announce is held while a stop or an end goes out and its state
	// is set, so that states are set in the order their events went out:
	// a stop whose event left just before the process was killed never
	// overwrites the end reported after it.
	announce sync.Mutex

	inferior
	// loaded is the program start loaded (sources.go).
	loaded loadedProgram
	gdb    conn
	// watched is closed once the watcher of gdb has reported its end.
	watched <-chan struct{}
	term    *program.Terminal
	out     *program.Output
	closed  bool
	// startGDB starts a gdb for the rank: Start, or a spawn by the
	// rank's own server (NewSpawned).
	startGDB func() (conn, error)
}

// ErrClosed answers commands that arrive after Close.
var ErrClosed = errors.New("debugger closed")

// New returns the backend of rank cfg.Rank. gdb itself starts with the
// first start command, so that a missing gdb is reported as that command's
// answer, naming the rank, instead of killing the server.
func New(cfg backend.Config) *Backend {
	return newBackend(cfg, func() (conn, error) { return Start(cfg.Path) })
}

// NewSpawned returns the backend of rank cfg.Rank whose gdb is started,
// each time the rank needs one, by spawn: by the rank's own server, a
// member of the host node that drives the rank (wire.Member.Spawn), so
// that gdb and the program are that server's children, with the
// environment, descriptors and limits its launcher gave it.
func NewSpawned(cfg backend.Config, spawn func(context.Context) (member.Spawned, error)) *Backend {
	path := cfg.Path
	if path == "" {
		path = "gdb"
	}
	return newBackend(cfg, func() (conn, error) {
		ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
		defer cancel()
		s, err := spawn(ctx)
		if err != nil {
			return nil, err
		}
		return Adopt(path, s), nil
	})
}

func newBackend(cfg backend.Config, start func() (conn, error)) *Backend {
	b := &Backend{
		cfg:      cfg,
		events:   make(chan backend.Event, 256),
		queue:    fifo.New[job](),
		inferior: newInferior(),
		startGDB: start,
	}
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
	case !b.queue.Push(job{ctx: ctx, call: call, done: done}):
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
	if g != nil && kill && g.Ended() {
		b.killWatched() // gdb's end let go of it: it ends with the session still
	}
	b.unwatch()
	out.Stop()
	if g != nil && kill {
		ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
		g.Run(ctx, "-interpreter-exec console kill")
		cancel()
	}
	for _, j := range b.queue.Abandon() {
		j.done(nil, ErrClosed)
	}
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
		j, err := b.queue.Pop(context.Background())
		if err != nil {
			return // closed
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

// Send implements program.Sink: the program's output goes up as any
// event does.
func (b *Backend) Send(ev backend.Event) bool { return b.send(ev) }

// PID implements program.Sink.
func (b *Backend) PID() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.pid
}

// emit sends an event up unless the backend is closing, attaching or
// peeking.
func (b *Backend) emit(op string, body []byte) { b.send(backend.Event{Op: op, Body: body}) }

// send is emit for a whole event; it says whether the event went up.
func (b *Backend) send(ev backend.Event) bool {
	b.mu.Lock()
	quiet := b.closed || b.attaching || b.peeking
	b.mu.Unlock()
	if !quiet {
		b.events <- ev
	}
	return !quiet
}

func (b *Backend) status() (wire.State, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.announced(); err != nil {
		return wire.State{}, err
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

// announced waits, with b.mu held, until the stops and ends sent as
// events have their states set.
func (b *Backend) announced() error {
	deadline := time.After(announceWait)
	for b.announcing > 0 {
		changed := b.changed
		b.mu.Unlock()
		select {
		case <-changed:
		case <-deadline:
			b.mu.Lock()
			return fmt.Errorf("rank %d: news of the process was not sent within %v", b.cfg.Rank, announceWait)
		}
		b.mu.Lock()
	}
	return nil
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
	b.lateInterrupt = time.Time{} // the SIGINT stop to come is the halt's
	b.mu.Unlock()
	if state.State == wire.StateRunning && pid > 0 {
		if err := unix.Tgkill(pid, pid, unix.SIGINT); err != nil {
			return wire.State{}, fmt.Errorf("interrupt process %d: %w", pid, err)
		}
	}
	return state, nil
}

var _ backend.Ops = (*Backend)(nil)

// NewShared returns the backend of rank cfg.Rank whose gdb is its share
// of one of pool's (Host), with what share gives.
func NewShared(cfg backend.Config, pool *Pool, share Share) *Backend {
	return newBackend(cfg, func() (conn, error) {
		ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
		defer cancel()
		return pool.view(ctx, share)
	})
}
