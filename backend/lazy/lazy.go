// Package lazy is the backend of a rank that starts its gdb only when a
// command needs one (--gdb lazy). Until then it runs the program itself (on
// a terminal of its own, package program), or takes over a process of a
// running job by its pid, holds it (package hold), and answers from the
// outside: where and sample take native stack snapshots (package
// stackwalk) of the running or stopped process, which keeps running or
// stays stopped; status is the state the backend left; halt holds the
// process and continue lets it go; kill sends SIGKILL.
//
// The first other command (break, print, step, …) hands the rank to a
// gdbmi.Backend: a program loaded and not running is loaded into gdb, so
// that breakpoints set before run work as they always did; a process
// that runs or is stopped is attached to, stopped, and, once the command
// has run, let go on if it was running. From then on gdb answers
// everything, as with an eager server; the program's output keeps coming
// through the terminal it was started on.
//
// sdm debug and sdm attach start rank servers with --gdb lazy; a server's
// own default, for launchers that start it themselves, is eager (gdbmi
// alone). A lazy server's backend holds a gdbmi.Backend whose gdb has not
// started, and answers without it, as below.
//
// # Before gdb
//
// start finds the program and keeps it; run starts it itself, on a
// terminal of its own (program.Terminal, shared with gdbmi), with SDM_RANK
// and SDM_SIZE in its environment, as gdb would; but in a process group of
// its own within the server's session, without a controlling terminal, as
// a launcher's ranks run, where gdb gives it a session: Linux's autogroups
// share the processors equally between sessions, and a session per rank
// left a node's servers, all in their launcher's session, one share
// against one per rank (a stacks of 64 spinning ranks then took seconds;
// docs/PERFORMANCE.md). For a member's rank the leader starts the program
// as the member would (Origin; package member).
//
// The rank's process is held (package hold) from the start: one the server
// starts stops at its exec (PTRACE_TRACEME, detached into a SIGSTOP and
// seized there, so that it can be interrupted and left in a job-control
// stop), one taken by pid (attach: MPIR, --pid, --pids, --starter) is
// seized where it stands, new threads followed. A fatal signal (SIGSEGV,
// SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGSYS, SIGTRAP) stops it at the fault
// with every thread held, before any handler of the program or its MPI
// library runs, and is told as gdb tells it (signal-received, the signal,
// the faulting thread's frame); every other signal is delivered at once. A
// rank that never faults is stopped only for the instant a signal or a new
// thread takes, and at its start (three stops: the exec's, the seize's,
// SIGCONT's).
//
// attach stops the process when asked to. A job the session launched (its
// ranks may wait at MPIR_debug_gate) or acquired before main goes to gdb
// at once: only gdb opens the gate and runs to main.
//
// where, bt (without full) and sample take native stack samples
// (stackwalk, one Sampler per server, its module cache shared by every
// sample and, through the user's cache, with the host's other servers): a
// running process keeps running, a stopped one stays stopped. where is the
// faulting thread's stack, else the main thread's; sample every thread's,
// Count times Interval apart, the rank in Moved when its stacks differ
// from one sample to the next. Stacks are cut after main, as gdb cuts
// them, so that sampled and gdb stacks merge; a frame without a source
// file names its module's base name. Arguments are not read (gdb reads
// them). queues names each operation's caller from the same modules
// (package mpiq).
//
// status is the state the backend left, or stopped when the process is in
// a job-control stop from outside; halt holds every thread (no signal) and
// tells the stop, with the main thread's innermost frame, as an event
// (reason signal-received, signal SIGSTOP) once every thread has stopped;
// continue lets a held process go (a fault's signal delivered: the
// program's handler runs, or it ends, as after gdb's continue), or sends
// SIGCONT to one stopped from outside; kill sends SIGKILL, and tells the
// end. The end comes from the tracer, with its status.
//
// # The hand-over to gdb
//
// Any other command (and bt full) hands the rank over first: a loaded
// program that does not run is loaded into gdb (start), so break main then
// run works as before; a process is handed off (hold.HandOff: left in a
// job-control stop, untraced, a fault's signal queued again in its
// thread), gdb attaches to it, the stop is lifted with SIGCONT while gdb
// holds it (unless the process was found stopped: gdb would otherwise
// leave it stopped when it detaches), and a fault becomes gdb's own stop
// (gdbmi.Backend.TakeFault: the faulting thread alone goes on to its
// pending signal, whose siginfo is given back), so that print and up work
// at the fault and continue delivers the signal; the command runs, and a
// process that was running is continued. From then on every command goes
// to gdbmi in the order it came; the program's output still comes through
// the lazy backend's terminal.
//
// Close kills what the session owns (a program it started, a job it
// launched) and lets a taken process go as it was found: running, or in
// the job-control stop it was in unless the session resumed it, untraced,
// nothing pending.
package lazy

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/sdm-hpc/sdm/backend"
	"github.com/sdm-hpc/sdm/backend/gdbmi"
	"github.com/sdm-hpc/sdm/backend/program"
	"github.com/sdm-hpc/sdm/internal/fifo"
	"github.com/sdm-hpc/sdm/op"
	"github.com/sdm-hpc/sdm/stackwalk"
	"github.com/sdm-hpc/sdm/wire"
)

// Backend is one rank's lazy debugger. mu guards the fields below it.
// Commands run one at a time on the worker, in the order they came, as
// they would in gdb; status and halt run at once on the caller's
// goroutine.
type Backend struct {
	cfg     backend.Config
	sampler *stackwalk.Sampler
	gdb     *gdbmi.Backend // started (its gdb) at the hand-over only
	origin  *Origin        // nil: the rank is this server's own
	events  chan backend.Event
	// answers are gdb's answers, passed on by the goroutine that passes
	// on gdb's events, after those gdb sent before it answered: gdbmi
	// tells a command's news before its answer, and the node must get
	// them in that order (a kill's end, then its answer).
	answers chan func()
	queue   *fifo.Queue[job]
	wg      sync.WaitGroup
	// sampling is held by a sample: two at once would both seize the
	// process, and one would be refused.
	sampling sync.Mutex

	mu      sync.Mutex
	handed  bool        // gdb answers every command from now on
	loaded  *wire.Start // the program start loaded, not yet given to gdb
	proc    *process    // the rank's process while it is not gdb's
	state   wire.State
	telling chan struct{} // closed once the state being told is state
	term    *program.Terminal
	out     *program.Output
	closed  bool
	stopped chan struct{} // closed by Close, for the waits of the helpers
}

// ErrClosed answers commands that arrive after Close.
var ErrClosed = errors.New("debugger closed")

// Origin is where the rank's program comes from when the backend runs in
// a server other than the rank's own (a member's rank, adopted by its
// host's first server): the program starts with what the member's
// launcher gave the member, as it would from the member itself.
type Origin struct {
	// Pid is the rank's own server, whose inheritable descriptors
	// (MPICH's and SLURM's $PMI_FD, say) the program gets.
	Pid int
	// Env is the program's environment, before sdm's variables and the
	// start's.
	Env []string
	// CPUs are the processors the program may run on (nil: this
	// server's).
	CPUs *unix.CPUSet
}

// New returns the lazy backend of rank cfg.Rank; sampler is the server's,
// whose module cache serves every sample it takes; gdb is the backend it
// hands the rank to, whose gdb starts then (nil: gdbmi.New's, a gdb of
// the rank's own); origin is nil for a rank of this server's own.
func New(cfg backend.Config, sampler *stackwalk.Sampler, gdb *gdbmi.Backend, origin *Origin) *Backend {
	if gdb == nil {
		gdb = gdbmi.New(cfg)
	}
	b := &Backend{
		cfg:     cfg,
		sampler: sampler,
		gdb:     gdb,
		origin:  origin,
		events:  make(chan backend.Event, 256),
		answers: make(chan func()),
		queue:   fifo.New[job](),
		state:   wire.State{State: wire.StateNotStarted},
		stopped: make(chan struct{}),
	}
	b.wg.Add(2)
	go func() {
		defer b.wg.Done()
		b.forward()
	}()
	go func() {
		defer b.wg.Done()
		b.work()
	}()
	return b
}

// forward passes gdb's events on, and its answers after the events it
// sent before them: when gdbmi answers, those are in its channel
// already, or passed on.
func (b *Backend) forward() {
	events := b.gdb.Events()
	for {
		select {
		case ev, ok := <-events:
			if !ok {
				return
			}
			b.events <- ev
		case answer := <-b.answers:
			for pending := true; pending; {
				select {
				case ev, ok := <-events:
					if pending = ok; ok {
						b.events <- ev
					}
				default:
					pending = false
				}
			}
			answer()
		}
	}
}

// inGDB runs a command in gdb, whose answer done gets after gdb's news.
func (b *Backend) inGDB(ctx context.Context, op string, body []byte, done func([]byte, error)) {
	b.gdb.Do(ctx, op, body, func(answer []byte, err error) { b.answer(done, answer, err) })
}

// answer gives done an answer of gdb's after the news gdb sent before it
// (forward); once the backend closes, at once.
func (b *Backend) answer(done func([]byte, error), answer []byte, err error) {
	select {
	case b.answers <- func() { done(answer, err) }:
	case <-b.stopped:
		done(answer, err)
	}
}

// job is a command waiting for the worker.
type job struct {
	ctx  context.Context
	op   string
	body []byte
	call backend.Call
	done func([]byte, error)
}

// Events implements backend.Backend.
func (b *Backend) Events() <-chan backend.Event { return b.events }

// Do implements backend.Backend.
func (b *Backend) Do(ctx context.Context, op string, body []byte, done func([]byte, error)) {
	call, err := backend.Decode(op, body)
	if err != nil {
		done(nil, err)
		return
	}
	b.mu.Lock()
	handed := b.handed
	b.mu.Unlock()
	switch {
	case (op == wire.OpStatus || op == wire.OpHalt) && handed:
		b.inGDB(ctx, op, body, done)
	case op == wire.OpStatus || op == wire.OpHalt:
		done(call(ctx, b.native()))
	case !b.queue.Push(job{ctx: ctx, op: op, body: body, call: call, done: done}):
		done(nil, ErrClosed)
	}
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
		b.mu.Lock()
		handed := b.handed
		b.mu.Unlock()
		switch {
		case handed:
			b.inGDB(j.ctx, j.op, j.body, j.done)
		case !needsGDB(j):
			j.done(j.call(j.ctx, b.native()))
		default:
			b.handOver(j)
		}
	}
}

// needsGDB says whether j is a command only gdb answers: one not in
// withoutGDB, or a backtrace with the frames' locals.
func needsGDB(j job) bool {
	if j.op == wire.OpBacktrace {
		bt, err := op.Backtrace.DecodeBody(j.body)
		return err != nil || bt.Full
	}
	return !withoutGDB[j.op]
}

// withoutGDB are the ops answered without gdb until the hand-over. dlopen
// is gdbmi's, which keeps the setting without a gdb.
var withoutGDB = map[string]bool{
	wire.OpStart: true, wire.OpRun: true, wire.OpCont: true, wire.OpKill: true,
	wire.OpAttach: true, wire.OpDetach: true, wire.OpWhere: true, wire.OpSample: true,
	wire.OpDlopen: true, wire.OpQueues: true,
}

// Close ends the rank's process where the session owns it (one it
// started, or one attached to be killed with the session) and lets any
// other go on, ends gdb if it was started, and stops the backend; Events
// is closed once everything has stopped.
func (b *Backend) Close() error {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return nil
	}
	b.closed = true
	close(b.stopped)
	p, handed, out, term := b.proc, b.handed, b.out, b.term
	b.mu.Unlock()
	for _, j := range b.queue.Abandon() {
		j.done(nil, ErrClosed)
	}
	if p != nil && !handed {
		b.release(p)
	}
	b.gdb.Close()
	out.Stop()
	if term != nil {
		term.Close()
	}
	b.wg.Wait()
	close(b.events)
	return nil
}

// Send implements program.Sink: the program's output goes up as any
// event does, unless the backend is closing.
func (b *Backend) Send(ev backend.Event) bool {
	b.mu.Lock()
	closed := b.closed
	b.mu.Unlock()
	if !closed {
		b.events <- ev
	}
	return !closed
}

// PID implements program.Sink.
func (b *Backend) PID() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.proc == nil {
		return 0
	}
	return b.proc.pid
}

// emit sends news of the process up, then makes st the state, so that
// an answer saying st comes after the news. Meanwhile the state is
// being told (telling): an answer that reads it waits (settled), or it
// would say the old state after the news of the new, and whoever waits
// for news would wait in vain.
func (b *Backend) emit(op string, st wire.State) {
	told := make(chan struct{})
	b.mu.Lock()
	b.telling = told
	b.mu.Unlock()
	b.Send(backend.Event{Op: op, Body: wire.MustEncode(st)})
	b.mu.Lock()
	b.state = st
	if b.telling == told {
		b.telling = nil
	}
	b.mu.Unlock()
	close(told)
}

// settled waits until no state is being told (emit), or ctx ends.
func (b *Backend) settled(ctx context.Context) {
	b.mu.Lock()
	told := b.telling
	b.mu.Unlock()
	if told != nil {
		select {
		case <-told:
		case <-ctx.Done():
		case <-b.stopped:
		}
	}
}

// rankErr names the rank in an error a user reads among many ranks'.
func (b *Backend) rankErr(format string, a ...any) error {
	return fmt.Errorf("rank %d: %s", b.cfg.Rank, fmt.Sprintf(format, a...))
}

var _ backend.Backend = (*Backend)(nil)
