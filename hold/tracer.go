package hold

import (
	"context"
	"encoding/binary"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/sdm-hpc/sdm/internal/procfs"
	"github.com/sdm-hpc/sdm/stackwalk"
)

// tracer is the state only the tracing goroutine touches.
type tracer struct {
	p       *Process
	threads map[int]*thread
	// held: the threads stay stopped (Hold, or a fault) until Resume.
	held  bool
	fault *Fault
	// finished: the process ended or was let go (why says which); the
	// tracer stops.
	finished bool
	why      error
}

// thread is one traced thread.
type thread struct {
	tid     int
	stopped bool // in a ptrace-stop the tracer has read and not ended
	// sig is the signal its stop took (a signal-delivery-stop), to be
	// delivered when it goes on.
	sig unix.Signal
	// group marks a stop that is the thread's part of a job-control stop:
	// it goes on listening (PTRACE_LISTEN), stopped until SIGCONT.
	group bool
	// listening: in a job-control stop, let go with PTRACE_LISTEN.
	listening bool
}

func (t *tracer) add(tid int) *thread {
	th := t.threads[tid]
	if th == nil {
		th = &thread{tid: tid}
		t.threads[tid] = th
	}
	return th
}

// reap reads every stop and end the kernel has for the tracer, without
// waiting.
func (t *tracer) reap() {
	for !t.finished {
		var ws unix.WaitStatus
		tid, err := wait4(-1, &ws, unix.WALL|unix.WNOHANG|wnothread)
		if err != nil || tid <= 0 {
			return
		}
		t.handle(tid, ws)
	}
}

// handle acts on one wait status of thread tid.
func (t *tracer) handle(tid int, ws unix.WaitStatus) {
	if ws.Exited() || ws.Signaled() {
		delete(t.threads, tid)
		if tid == t.p.pid {
			t.end(ws)
		}
		return
	}
	if !ws.Stopped() {
		return
	}
	th := t.add(tid)
	th.stopped, th.listening = true, false
	sig := ws.StopSignal()
	// The event of a ptrace-stop, which WaitStatus.TrapCause reads only
	// from a stop by SIGTRAP (a job-control stop's is another signal).
	switch int(uint32(ws)>>16) & 0xff {
	case unix.PTRACE_EVENT_CLONE:
		if msg, err := unix.PtraceGetEventMsg(tid); err == nil {
			t.add(int(msg))
		}
	case unix.PTRACE_EVENT_STOP:
		// An interrupt, a new thread's first stop (SIGTRAP), or the
		// thread's part of a job-control stop (the stopping signal).
		th.group = sig == unix.SIGSTOP || sig == unix.SIGTSTP || sig == unix.SIGTTIN || sig == unix.SIGTTOU
	case 0:
		th.sig, th.group = sig, false
		if Fatal[sig] && t.fault == nil {
			t.caught(th)
			return
		}
	default:
		// An event not asked for: nothing to do but go on.
	}
	if !t.held {
		t.goOn(th)
	}
}

// caught holds the process at the fault of thread th: every thread is
// stopped, and the fault is told.
func (t *tracer) caught(th *thread) {
	f := &Fault{TID: th.tid, Signal: th.sig}
	var info [128]byte
	if _, _, errno := unix.Syscall6(unix.SYS_PTRACE, unix.PTRACE_GETSIGINFO, uintptr(th.tid), 0,
		uintptr(unsafe.Pointer(&info[0])), 0, 0); errno == 0 {
		f.Errno = int32(binary.LittleEndian.Uint32(info[4:]))
		f.Code = int32(binary.LittleEndian.Uint32(info[8:]))
		f.Addr = binary.LittleEndian.Uint64(info[16:])
	}
	t.held, t.fault = true, f
	// Should another thread not stop in time, the fault is still told:
	// the thread that faulted is held, which is what counts.
	t.stopAll(context.Background())
	if !t.finished {
		t.p.events <- Event{Fault: f}
	}
}

// end records the process's end and tells it.
func (t *tracer) end(ws unix.WaitStatus) {
	if t.p.cmd != nil {
		t.p.cmd.Process.Release()
	}
	t.finished, t.why = true, ErrEnded
	t.p.events <- Event{Ended: &End{Status: ws}}
}

// goOn lets a stopped thread go on: a job-control stop by listening, any
// other stop with the signal it took.
func (t *tracer) goOn(th *thread) error {
	if !th.stopped {
		return nil
	}
	var err error
	if th.group {
		err = ptrace(unix.PTRACE_LISTEN, th.tid, 0)
		th.listening = err == nil
	} else {
		err = ptrace(unix.PTRACE_CONT, th.tid, uintptr(th.sig))
	}
	if err == unix.ESRCH {
		err = nil // it is exiting: its end follows
	}
	th.stopped = false
	if !th.group {
		th.sig = 0
	}
	return err
}

// stopAll interrupts every thread that is not stopped and waits until
// all are (threads made meanwhile included: they start stopped).
func (t *tracer) stopAll(ctx context.Context) error {
	var waiting []*thread
	for _, th := range t.threads {
		if !th.stopped {
			if err := unix.PtraceInterrupt(th.tid); err != nil && err != unix.ESRCH {
				return fmt.Errorf("process %d: interrupt thread %d: %w", t.p.pid, th.tid, err)
			}
			waiting = append(waiting, th)
		}
	}
	return t.waitStopped(ctx, waiting)
}

// waitStopped waits until every thread of ths has stopped or ended, and
// every thread made meanwhile has stopped too, under a deadline: stops
// come within microseconds, so the wait polls, its pause growing.
func (t *tracer) waitStopped(ctx context.Context, ths []*thread) error {
	start := time.Now()
	deadline := start.Add(waitLimit)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	pause := 5 * time.Microsecond
	for {
		t.reap()
		if t.finished {
			return t.why
		}
		var late []string
		for _, th := range ths {
			if t.threads[th.tid] == th && !th.stopped {
				late = append(late, strconv.Itoa(th.tid)+" ("+procfs.ThreadState(t.p.pid, th.tid)+")")
			}
		}
		if t.held {
			// New threads stop at their start and stay.
			for _, th := range t.threads {
				if !th.stopped {
					late = append(late, strconv.Itoa(th.tid)+" ("+procfs.ThreadState(t.p.pid, th.tid)+")")
				}
			}
		}
		if len(late) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			sort.Strings(late)
			return fmt.Errorf("process %d: threads %s did not stop within %v", t.p.pid,
				strings.Join(late, ", "), time.Since(start).Round(time.Millisecond))
		}
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("process %d: waiting for its threads to stop: %w", t.p.pid, err)
		}
		time.Sleep(pause)
		pause = min(2*pause, time.Millisecond)
	}
}

// resumeAll ends a hold: every thread goes on.
func (t *tracer) resumeAll() error {
	t.held, t.fault = false, nil
	var first error
	for _, th := range t.threads {
		if err := t.goOn(th); err != nil && first == nil {
			first = fmt.Errorf("process %d: resume thread %d: %w", t.p.pid, th.tid, err)
		}
	}
	return first
}

// jobStopped says whether every thread is in its part of a job-control
// stop.
func (t *tracer) jobStopped() bool {
	if len(t.threads) == 0 {
		return false
	}
	for _, th := range t.threads {
		if !th.group {
			return false
		}
	}
	return true
}

// walk walks every thread's stack, stopped: those that run are stopped
// for the walk and go on after it, unless a fault came meanwhile.
func (t *tracer) walk(ctx context.Context, w *stackwalk.Walker) (time.Duration, error) {
	begin := time.Now()
	wasHeld := t.held
	t.held = true
	err := t.stopAll(ctx)
	if err == nil {
		var tids []int
		for tid, th := range t.threads {
			if th.stopped {
				tids = append(tids, tid)
			}
		}
		for _, tid := range tids {
			regs, rerr := stackwalk.ReadRegisters(tid)
			if rerr != nil {
				continue // it is exiting
			}
			w.Walk(tid, regs)
		}
	}
	if !wasHeld && t.fault == nil && !t.finished {
		t.held = false
		if rerr := t.resumeAll(); err == nil {
			err = rerr
		}
	}
	return time.Since(begin), err
}

// release detaches every thread: each with the signal its stop took; one
// in a job-control stop stays in it (the kernel keeps it).
func (t *tracer) release(ctx context.Context) error {
	jobStopped := t.jobStopped()
	t.held = true
	err := t.stopAll(ctx)
	for _, th := range t.threads {
		sig := th.sig
		if th.group {
			sig = 0
		}
		if derr := detach(th.tid, sig); derr != nil && err == nil && derr != unix.ESRCH {
			err = fmt.Errorf("process %d: detach thread %d: %w", t.p.pid, th.tid, derr)
		}
	}
	t.finished, t.why = true, ErrReleased
	if jobStopped && err == nil {
		// A detached thread goes back into the stop only once the
		// scheduler runs it: until then it looks running, and a release
		// must leave the process as it found it.
		err = waitJobStopped(ctx, t.p.pid)
	}
	return err
}

// handOff leaves the process in a job-control stop, untraced: SIGSTOP is
// queued while every thread is held, so that each goes from its detach
// into the stop without running; signals the stops took are queued again
// once it is stopped (a fault's in its thread, first).
func (t *tracer) handOff(ctx context.Context) (*Fault, error) {
	t.held = true
	if err := t.stopAll(ctx); err != nil {
		return nil, err
	}
	pid := t.p.pid
	alreadyStopped := t.jobStopped()
	if !alreadyStopped {
		if err := unix.Kill(pid, unix.SIGSTOP); err != nil {
			return nil, fmt.Errorf("process %d: stop it: %w", pid, err)
		}
	}
	pending := map[int]unix.Signal{}
	for _, th := range t.threads {
		if th.sig != 0 && !th.group && th.sig != unix.SIGSTOP {
			pending[th.tid] = th.sig
		}
		if err := detach(th.tid, 0); err != nil && err != unix.ESRCH {
			return nil, fmt.Errorf("process %d: detach thread %d: %w", pid, th.tid, err)
		}
	}
	t.finished, t.why = true, ErrReleased
	if err := waitJobStopped(ctx, pid); err != nil {
		return nil, err
	}
	f := t.fault
	if f != nil {
		if err := unix.Tgkill(pid, f.TID, f.Signal); err != nil {
			return nil, fmt.Errorf("process %d: queue %s again in thread %d: %w", pid, unix.SignalName(f.Signal), f.TID, err)
		}
		delete(pending, f.TID)
	}
	for tid, sig := range pending {
		unix.Tgkill(pid, tid, sig)
	}
	return f, nil
}
