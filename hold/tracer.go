package hold

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
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

// options: follow new threads; a process this server started dies with
// it (exitKill).
const options = unix.PTRACE_O_TRACECLONE

// adopt turns the child that PTRACE_TRACEME stopped at its exec into a
// seized one: a tracee of PTRACE_TRACEME cannot be interrupted nor left
// in a job-control stop. Detached with SIGSTOP, it stops before its first
// instruction; seized there, it is woken by SIGCONT, which also ends the
// job-control stop (a detach later would otherwise stop it again). Each
// step's stop is certain and immediate, so the waits block: this is on
// the way of every rank's start.
func (t *tracer) adopt(pid int) error {
	stop := func(what string) (unix.WaitStatus, error) {
		var ws unix.WaitStatus
		if _, err := rawWait4(pid, &ws, unix.WALL); err != nil {
			return ws, fmt.Errorf("process %d: wait for %s: %w", pid, what, err)
		}
		if !ws.Stopped() {
			return ws, fmt.Errorf("process %d ended at its start (%s)", pid, describe(ws))
		}
		return ws, nil
	}
	if _, err := stop("its exec"); err != nil {
		return err
	}
	if err := detach(pid, unix.SIGSTOP); err != nil {
		return fmt.Errorf("process %d: %w", pid, err)
	}
	if err := seize(pid, options|unix.PTRACE_O_EXITKILL); err != nil {
		return fmt.Errorf("process %d: ptrace seize: %w", pid, err)
	}
	if _, err := stop("its stop"); err != nil {
		return err
	}
	if err := unix.Kill(pid, unix.SIGCONT); err != nil {
		return fmt.Errorf("process %d: continue it: %w", pid, err)
	}
	// SIGCONT is the next signal it takes, at once.
	for sig := unix.Signal(0); sig != unix.SIGCONT; {
		if err := ptrace(unix.PTRACE_CONT, pid, 0); err != nil {
			return fmt.Errorf("process %d: continue it: %w", pid, err)
		}
		ws, err := stop("SIGCONT")
		if err != nil {
			return err
		}
		sig = ws.StopSignal()
	}
	t.add(pid)
	return ptrace(unix.PTRACE_CONT, pid, uintptr(unix.SIGCONT))
}

// seize holds every thread of pid, rescanning /proc/PID/task until no new
// thread appears (a new one of a seized thread is followed by the
// kernel: a second seize of it is refused, and not needed).
func (t *tracer) seize(pid int) error {
	for {
		tids, err := threadIDs(pid)
		if err != nil {
			t.abandon()
			return err
		}
		fresh := 0
		for _, tid := range tids {
			if t.threads[tid] != nil {
				continue
			}
			fresh++
			if err := seize(tid, options); err != nil {
				if err == unix.ESRCH || tracedByMe(tid) {
					continue
				}
				t.abandon()
				return seizeError(pid, tid, err)
			}
			t.add(tid)
		}
		if fresh == 0 {
			break
		}
	}
	if len(t.threads) == 0 {
		return fmt.Errorf("process %d: no such process (it has exited)", pid)
	}
	t.reap()
	return nil
}

// abandon lets go of what a failed start took: a started child is killed
// and reaped; seized threads are detached.
func (t *tracer) abandon() {
	t.held = true
	if cmd := t.p.cmd; cmd != nil && cmd.Process != nil {
		unix.Kill(cmd.Process.Pid, unix.SIGKILL)
		var ws unix.WaitStatus
		wait4(cmd.Process.Pid, &ws, unix.WALL)
		cmd.Process.Release()
		return
	}
	for tid := range t.threads {
		unix.PtraceInterrupt(tid)
	}
	for _, th := range t.threads {
		t.waitStopped(context.Background(), []*thread{th})
		detach(th.tid, 0)
	}
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

// waitJobStopped waits until every thread of pid is in the job-control
// stop (state T), under waitLimit.
func waitJobStopped(ctx context.Context, pid int) error {
	start := time.Now()
	pause := 10 * time.Microsecond
	for {
		tids, err := threadIDs(pid)
		if err != nil {
			return err
		}
		var late []string
		for _, tid := range tids {
			if st := procfs.ThreadState(pid, tid); st != "T" && st != "Z" && st != "X" && st != "unknown" {
				late = append(late, strconv.Itoa(tid)+" ("+st+")")
			}
		}
		if len(late) == 0 {
			return nil
		}
		if time.Since(start) > waitLimit {
			return fmt.Errorf("process %d: threads %s did not stop within %v of SIGSTOP", pid, strings.Join(late, ", "), waitLimit)
		}
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("process %d: waiting for it to stop: %w", pid, err)
		}
		time.Sleep(pause)
		pause = min(2*pause, time.Millisecond)
	}
}

// wnothread limits a wait to the calling thread's children and tracees
// (__WNOTHREAD): the server's other children (gdb) are not the tracer's
// to reap.
const wnothread = 0x20000000

func wait4(pid int, ws *unix.WaitStatus, options int) (int, error) {
	for {
		got, err := unix.Wait4(pid, ws, options, nil)
		if err != unix.EINTR {
			return got, err
		}
	}
}

// rawWait4 is wait4 for a stop that is certain and comes within
// microseconds: a raw system call keeps the goroutine's processor, which
// a blocking one would hand over (waking a thread to take it) and take
// back, for nothing.
func rawWait4(pid int, ws *unix.WaitStatus, options int) (int, error) {
	for {
		r, _, errno := unix.RawSyscall6(unix.SYS_WAIT4, uintptr(pid), uintptr(unsafe.Pointer(ws)), uintptr(options), 0, 0, 0)
		if errno == 0 {
			return int(r), nil
		}
		if errno != unix.EINTR {
			return 0, errno
		}
	}
}

// ptrace makes a ptrace request with a data argument, which x/sys/unix's
// wrappers of PTRACE_CONT and PTRACE_DETACH do not all take.
func ptrace(req, tid int, data uintptr) error {
	if _, _, errno := unix.Syscall6(unix.SYS_PTRACE, uintptr(req), uintptr(tid), 0, data, 0, 0); errno != 0 {
		return errno
	}
	return nil
}

func detach(tid int, sig unix.Signal) error { return ptrace(unix.PTRACE_DETACH, tid, uintptr(sig)) }

// seize seizes a thread with its options: set later, they would need
// the thread stopped.
func seize(tid, opts int) error {
	if _, _, errno := unix.Syscall6(unix.SYS_PTRACE, unix.PTRACE_SEIZE, uintptr(tid), 0, uintptr(opts), 0, 0); errno != 0 {
		return errno
	}
	return nil
}

// describe says how a wait status ended a process.
func describe(ws unix.WaitStatus) string {
	if ws.Signaled() {
		return "killed by " + unix.SignalName(ws.Signal())
	}
	return "exit status " + strconv.Itoa(ws.ExitStatus())
}

// threadIDs lists /proc/PID/task.
func threadIDs(pid int) ([]int, error) {
	tids, err := procfs.ThreadIDs(pid)
	if errors.Is(err, os.ErrNotExist) || errors.Is(err, unix.ESRCH) {
		return nil, fmt.Errorf("process %d: no such process (it has exited)", pid)
	}
	if err != nil {
		return nil, fmt.Errorf("process %d: list its threads: %w", pid, err)
	}
	return tids, nil
}

// tracedByMe says whether thread tid is traced by this process already
// (a new thread of a seized one).
func tracedByMe(tid int) bool {
	tracer, _ := strconv.Atoi(procfs.StatusField(tid, "TracerPid"))
	if tracer == 0 {
		return false
	}
	tgid, _ := strconv.Atoi(procfs.StatusField(tracer, "Tgid"))
	return tgid == os.Getpid()
}

// seizeError says why the kernel refused to let this process trace a
// thread of pid.
func seizeError(pid, tid int, err error) error {
	if err != unix.EPERM {
		return fmt.Errorf("process %d: ptrace seize of thread %d: %w", pid, tid, err)
	}
	return &stackwalk.PermissionError{PID: pid, Reason: stackwalk.Refusal(pid)}
}
