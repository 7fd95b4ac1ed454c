// Package hold keeps a rank's process under ptrace while no debugger
// has it, so that nothing the process does escapes the session: a fatal
// signal (SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGSYS, SIGTRAP)
// stops it at the fault, before any handler of the program or its MPI
// library runs, as under gdb; the process's end is known with its
// status. Every other signal is delivered at once, and a process that
// never faults is never stopped but for the instant a signal or a new
// thread takes.
//
// The process is seized (PTRACE_SEIZE, with its new threads followed):
// one it starts from its first instruction (Start), one of a running job
// where it stands (Seize). What leaves: Events (a fault, with every
// thread held; the end), Sample (every thread's stack, through a
// stackwalk.Walker; a running process runs on), and the ways to let it
// go: Resume, Release (untraced, as it was found, or left in a
// job-control stop it was in), HandOff (stopped by SIGSTOP, untraced,
// with the signal it faulted with pending again, for gdb to attach to).
//
// Every ptrace call on a process comes from one goroutine locked to its
// OS thread, the tracer, which also waits for the process's stops: the
// kernel tells them, by SIGCHLD, to this server's process, and only the
// tracing thread may act on them. Linux on amd64 (ptrace is Linux's; the
// stacks are stackwalk's).
package hold

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sdm-hpc/sdm/stackwalk"
)

// Process is a process held by a tracer of its own. Its methods may be
// called from any goroutine; each runs on the tracer, one at a time.
type Process struct {
	pid    int
	cmd    *exec.Cmd // nil: seized by pid
	reqs   chan request
	wake   chan os.Signal // a SIGCHLD came: stops to read
	events chan Event
	done   chan struct{} // closed when the tracer has let go of the process
	err    error         // why it let go (ErrEnded, ErrReleased), set before done

	t tracer // the tracer's own state, touched by its goroutine only
}

// Event is news of the process: a fault (Fault set), or its end (Ended).
type Event struct {
	Fault *Fault
	Ended *End
}

// Fault is a fatal signal a thread stopped at: it has not been
// delivered, and every thread is held.
type Fault struct {
	TID    int
	Signal unix.Signal
	// Code, Errno and Addr are the kernel's siginfo of the signal
	// (si_code, si_errno, and the first word of its union: the fault's
	// address, or the sender's pid and uid), for a debugger to give the
	// signal as the kernel gave it.
	Code  int32
	Errno int32
	Addr  uint64
}

// End is how the process ended.
type End struct {
	Status unix.WaitStatus
}

// ErrEnded is the error of a call made once the process has ended.
var ErrEnded = errors.New("process ended")

// ErrReleased is the error of a call made once the process was let go.
var ErrReleased = errors.New("process let go")

// Fatal are the signals that stop a held process: those whose default
// action ends it with a core dump, as a fault does.
var Fatal = map[unix.Signal]bool{
	unix.SIGSEGV: true, unix.SIGBUS: true, unix.SIGFPE: true, unix.SIGILL: true,
	unix.SIGABRT: true, unix.SIGSYS: true, unix.SIGTRAP: true,
}

// waitLimit bounds how long the tracer waits for threads it interrupted
// to stop: a thread stops within microseconds unless the node is
// overloaded or the thread sleeps uninterruptibly (on a dead file
// system, say); one that takes longer is reported.
const waitLimit = 10 * time.Second

// Start starts cmd held from its first instruction: it runs once held.
// cmd must not have been started; its SysProcAttr gets Ptrace. The
// process is the tracer's child, reaped by it: never call cmd.Wait; its
// end is an event. If this server dies, the process is killed with it
// (PTRACE_O_EXITKILL): it is the session's.
func Start(cmd *exec.Cmd) (*Process, error) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Ptrace = true
	p := newProcess(cmd)
	started := make(chan error, 1)
	go p.trace(func() error {
		// The child stops at its exec (PTRACE_TRACEME's SIGTRAP), before
		// its first instruction.
		if err := cmd.Start(); err != nil {
			return err
		}
		p.pid = cmd.Process.Pid
		return p.t.adopt(p.pid)
	}, started)
	if err := <-started; err != nil {
		return nil, err
	}
	return p, nil
}

// Seize holds process pid (every thread) where it stands: a running one
// runs on, one stopped by a signal stays stopped.
func Seize(pid int) (*Process, error) {
	p := newProcess(nil)
	p.pid = pid
	started := make(chan error, 1)
	go p.trace(func() error { return p.t.seize(pid) }, started)
	if err := <-started; err != nil {
		return nil, err
	}
	return p, nil
}

func newProcess(cmd *exec.Cmd) *Process {
	p := &Process{
		cmd:    cmd,
		reqs:   make(chan request),
		wake:   make(chan os.Signal, 1),
		events: make(chan Event, 4),
		done:   make(chan struct{}),
	}
	p.t = tracer{p: p, threads: map[int]*thread{}}
	return p
}

// PID is the process's id.
func (p *Process) PID() int { return p.pid }

// Events are the process's faults and its end; the channel is closed once
// the tracer has let the process go.
func (p *Process) Events() <-chan Event { return p.events }

// Done is closed once the tracer has let the process go (it ended, or
// was released or handed off); Err then says which.
func (p *Process) Done() <-chan struct{} { return p.done }

// Err is why the tracer let go, once Done is closed.
func (p *Process) Err() error {
	select {
	case <-p.done:
		return p.err
	default:
		return nil
	}
}

// request is a call run on the tracer.
type request struct {
	ctx  context.Context
	run  func(ctx context.Context) error
	done chan error
}

// call runs f on the tracer under ctx and returns its error.
func (p *Process) call(ctx context.Context, f func(ctx context.Context) error) error {
	r := request{ctx: ctx, run: f, done: make(chan error, 1)}
	select {
	case p.reqs <- r:
	case <-p.done:
		return p.err
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case err := <-r.done:
		return err
	case <-p.done:
		// The request's answer, if it ran, was sent before the end.
		select {
		case err := <-r.done:
			return err
		default:
			return p.err
		}
	}
}

// Hold stops every thread and keeps it stopped (a halt).
func (p *Process) Hold(ctx context.Context) error {
	return p.call(ctx, func(ctx context.Context) error {
		p.t.held = true
		return p.t.stopAll(ctx)
	})
}

// Held says whether the process is held stopped: by Hold, or a fault.
func (p *Process) Held(ctx context.Context) (bool, error) {
	var held bool
	err := p.call(ctx, func(context.Context) error {
		held = p.t.held
		return nil
	})
	return held, err
}

// JobStopped says whether the process is in a job-control stop (a
// SIGSTOP from outside, or one it was in when seized).
func (p *Process) JobStopped(ctx context.Context) (bool, error) {
	var stopped bool
	err := p.call(ctx, func(context.Context) error {
		stopped = p.t.jobStopped()
		return nil
	})
	return stopped, err
}

// Resume lets the held threads go on, each with the signal its stop took
// (a fault's included, which the program's handler then gets, or which
// ends it); a job-control stop stays until SIGCONT.
func (p *Process) Resume(ctx context.Context) error {
	return p.call(ctx, func(context.Context) error { return p.t.resumeAll() })
}

// Sample takes every thread's stack with w's sampler, stopping the
// threads that run for as long as their walk takes.
func (p *Process) Sample(ctx context.Context, s *stackwalk.Sampler) (stackwalk.Snapshot, error) {
	var snap stackwalk.Snapshot
	w, err := s.Walker(p.pid)
	if err != nil {
		return snap, err
	}
	defer w.Close()
	var stopped time.Duration
	err = p.call(ctx, func(ctx context.Context) error {
		var err error
		stopped, err = p.t.walk(ctx, w)
		return err
	})
	if err != nil {
		return snap, err
	}
	snap = w.Snapshot()
	snap.Stopped = stopped
	return snap, nil
}

// Release lets the process go, untraced: it runs, unless it was in a
// job-control stop, which it stays in; a fault's signal is delivered.
func (p *Process) Release(ctx context.Context) error {
	return p.call(ctx, func(ctx context.Context) error { return p.t.release(ctx) })
}

// HandOff leaves the process stopped by SIGSTOP, untraced, for a
// debugger to attach to, and returns the fault it was held at, if any,
// whose signal is pending again in the faulting thread (its siginfo is
// the kernel's tkill's: Fault says what it was).
func (p *Process) HandOff(ctx context.Context) (*Fault, error) {
	var f *Fault
	err := p.call(ctx, func(ctx context.Context) error {
		var err error
		f, err = p.t.handOff(ctx)
		return err
	})
	return f, err
}

// Kill sends SIGKILL; the end comes as an event.
func (p *Process) Kill() error {
	select {
	case <-p.done:
		return p.err
	default:
	}
	if err := unix.Kill(p.pid, unix.SIGKILL); err != nil && err != unix.ESRCH {
		return fmt.Errorf("kill process %d: %w", p.pid, err)
	}
	return nil
}

// trace is the tracer: start runs first, on its locked thread, then it
// serves requests and stops until it lets the process go. The thread is
// unlocked only once it traces nothing: a tracer thread that ends lets
// its tracees go (or kills them, for PTRACE_O_EXITKILL), so while any
// remain it must not be given to other goroutines, nor end.
func (p *Process) trace(start func() error, started chan<- error) {
	runtime.LockOSThread()
	err := start()
	if err != nil {
		p.t.abandon()
		p.err = err
		close(p.events)
		close(p.done)
		started <- err
		return
	}
	unsubscribe := subscribe(p.wake)
	defer unsubscribe()
	started <- nil
	p.t.reap() // stops that came before the subscription
	for !p.t.finished {
		select {
		case r := <-p.reqs:
			if err := r.ctx.Err(); err != nil {
				r.done <- err
				continue
			}
			r.done <- r.run(r.ctx)
		case <-p.wake:
			p.t.reap()
		}
	}
	p.err = p.t.why
	close(p.events)
	close(p.done)
	if len(p.t.threads) == 0 {
		// Nothing is traced from this thread any more: Go may use it
		// again (the next rank's tracer, say) rather than make one.
		runtime.UnlockOSThread()
	}
}
