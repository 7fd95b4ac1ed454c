package mpir

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// onTracer runs f on an OS thread of its own that ends with it: Linux
// takes ptrace requests only from the thread that attached, and a thread
// that dies detaches what it traced, so nothing is left stopped if f
// panics or forgets.
func onTracer(f func()) {
	done := make(chan struct{})
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
		defer close(done)
		f()
	}()
	<-done
}

// thread is one traced thread of the starter.
type thread struct {
	stopped bool // in a ptrace stop: may be read, written, detached
	sig     int  // signal to hand back to it when it goes on
	fresh   bool // attached by a clone event: its first SIGSTOP is ours
	asked   bool // sent a SIGSTOP to stop it for detaching
}

// traced is a starter process under ptrace, and the state of its threads.
type traced struct {
	pid     int
	threads map[int]*thread
	mem     *os.File // /proc/PID/mem: reads and writes of any length
	sigchld chan os.Signal
	seized  bool   // attached with PTRACE_SEIZE (attach) rather than traced from exec (launch)
	bp      uint64 // where our breakpoint is, or 0
}

// backstop bounds a wait for a ptrace event when the SIGCHLD that should
// announce it never comes (it merges with others, or arrives first).
const backstop = 200 * time.Millisecond

func newTraced(pid int) *traced {
	t := &traced{pid: pid, threads: map[int]*thread{}, sigchld: make(chan os.Signal, 1)}
	signal.Notify(t.sigchld, syscall.SIGCHLD)
	return t
}

func (t *traced) close() {
	signal.Stop(t.sigchld)
	if t.mem != nil {
		t.mem.Close()
	}
}

func (t *traced) openMemory() error {
	f, err := os.OpenFile(fmt.Sprintf("/proc/%d/mem", t.pid), os.O_RDWR, 0)
	if err != nil {
		return fmt.Errorf("open the starter's memory: %w", err)
	}
	t.mem = f
	return nil
}

// errExited is the starter ending while traced; how it ended is for the
// caller to learn from its parent's wait.
var errExited = errors.New("the starter exited")

// wait returns the next ptrace event of one of the threads (of only, when
// it is not zero). The leader's exit is left unreaped for the starter's
// parent to collect, and returned as errExited. wake ends the wait early
// with (0, nil).
func (t *traced) wait(ctx context.Context, only int, wake <-chan struct{}) (int, unix.WaitStatus, error) {
	timer := time.NewTimer(backstop)
	defer timer.Stop()
	for {
		for tid := range t.threads {
			if only != 0 && tid != only {
				continue
			}
			if tid == t.pid {
				// Peek first: an exit stays for the parent's wait.
				var info unix.Siginfo
				err := unix.Waitid(unix.P_PID, tid, &info, unix.WEXITED|unix.WSTOPPED|unix.WNOHANG|unix.WNOWAIT|unix.WALL, nil)
				if err != nil || siginfoPid(&info) == 0 {
					if errors.Is(err, unix.ECHILD) {
						return 0, 0, errExited
					}
					continue
				}
				if code := siginfoCode(&info); code == cldExited || code == cldKilled || code == cldDumped {
					delete(t.threads, tid)
					return 0, 0, errExited
				}
			}
			var ws unix.WaitStatus
			got, err := unix.Wait4(tid, &ws, unix.WNOHANG|unix.WALL, nil)
			if errors.Is(err, unix.ECHILD) {
				delete(t.threads, tid) // gone without a word: a thread that exited
				continue
			}
			if got == tid {
				if ws.Exited() || ws.Signaled() {
					delete(t.threads, tid)
					continue
				}
				t.threads[tid].stopped = true
				return tid, ws, nil
			}
		}
		if len(t.threads) == 0 {
			return 0, 0, errExited
		}
		timer.Reset(backstop)
		select {
		case <-t.sigchld:
		case <-timer.C:
		case <-wake:
			return 0, 0, nil
		case <-ctx.Done():
			return 0, 0, ctx.Err()
		}
	}
}

// resume lets a stopped thread go on with sig.
func (t *traced) resume(tid, sig int) error {
	th := t.threads[tid]
	if th == nil || !th.stopped {
		return nil
	}
	th.stopped = false
	if err := ptrace(unix.PTRACE_CONT, tid, 0, uintptr(sig)); err != nil && !errors.Is(err, unix.ESRCH) {
		return fmt.Errorf("resume thread %d: %w", tid, err)
	}
	return nil
}

// handleClone answers a clone event: the new thread joins the set.
func (t *traced) handleClone(tid int, ws unix.WaitStatus) bool {
	if ptraceEvent(ws) != unix.PTRACE_EVENT_CLONE {
		return false
	}
	if msg, err := unix.PtraceGetEventMsg(tid); err == nil && t.threads[int(msg)] == nil {
		// A seized thread's new thread reports a PTRACE_EVENT_STOP, a
		// traced one's a SIGSTOP.
		t.threads[int(msg)] = &thread{fresh: !t.seized, asked: t.seized}
	}
	return true
}

// service handles an event that the current step does not wait for: a
// new thread joins and goes on, a ptrace event is acknowledged, a signal
// is handed on to its thread.
func (t *traced) service(tid int, ws unix.WaitStatus) error {
	th := t.threads[tid]
	sig := ws.StopSignal()
	switch {
	case t.handleClone(tid, ws):
		return t.resume(tid, 0)
	case th.fresh && sig == unix.SIGSTOP:
		th.fresh = false
		return t.resume(tid, 0)
	case ptraceEvent(ws) != 0:
		return t.resume(tid, 0) // an exec, say: not a signal to deliver
	}
	return t.resume(tid, int(sig))
}

// stopAll stops every running thread: with PTRACE_INTERRUPT when seized,
// else with a SIGSTOP of ours that detaching will swallow. Signals that
// arrive on the way are handed back to their thread when it is let go.
func (t *traced) stopAll(ctx context.Context) error {
	for tid, th := range t.threads {
		if !th.stopped && !th.asked {
			th.asked = true
			if t.seized {
				ptrace(unix.PTRACE_INTERRUPT, tid, 0, 0)
			} else {
				unix.Tgkill(t.pid, tid, unix.SIGSTOP)
			}
		}
	}
	for {
		running := 0
		for _, th := range t.threads {
			if th.asked || th.fresh {
				running++
			}
		}
		if running == 0 {
			return nil
		}
		tid, ws, err := t.wait(ctx, 0, nil)
		if err != nil {
			return fmt.Errorf("stop the starter's threads: %w", err)
		}
		th := t.threads[tid]
		sig := ws.StopSignal()
		switch {
		case t.handleClone(tid, ws):
			// The parent stops again for our request, the child as a
			// thread of its own.
			if err := t.resume(tid, 0); err != nil {
				return err
			}
		case t.seized && ptraceEvent(ws) == unix.PTRACE_EVENT_STOP,
			!t.seized && sig == unix.SIGSTOP:
			th.asked, th.fresh, th.sig = false, false, 0
		case t.atBreakpoint(tid, ws):
			th.asked, th.fresh, th.sig = false, false, 0
		case t.seized:
			th.asked, th.sig = false, int(sig)
		default:
			// Our SIGSTOP is still on its way: deliver this one first.
			if err := t.resume(tid, int(sig)); err != nil {
				return err
			}
		}
	}
}

// detach lets every thread go; all must be stopped (stopAll).
func (t *traced) detach() error {
	var errs []error
	for tid, th := range t.threads {
		if err := ptrace(unix.PTRACE_DETACH, tid, 0, uintptr(th.sig)); err != nil && !errors.Is(err, unix.ESRCH) {
			errs = append(errs, fmt.Errorf("detach thread %d: %w", tid, err))
		}
	}
	t.threads = map[int]*thread{}
	return errors.Join(errs...)
}

// atBreakpoint reports whether a thread stopped on the breakpoint t.bp,
// and if so winds it back to run the original instruction there.
func (t *traced) atBreakpoint(tid int, ws unix.WaitStatus) bool {
	if t.bp == 0 || ws.StopSignal() != unix.SIGTRAP || ptraceEvent(ws) != 0 {
		return false
	}
	pc, err := trapPC(tid)
	if err != nil || pc != t.bp {
		return false
	}
	return setPC(tid, pc) == nil
}

// ptraceEvent is the PTRACE_EVENT_* of a ptrace stop, 0 for a signal.
func ptraceEvent(ws unix.WaitStatus) int { return int(ws>>16) & 0xff }

func ptrace(req, pid int, addr, data uintptr) error {
	_, _, e := unix.Syscall6(unix.SYS_PTRACE, uintptr(req), uintptr(pid), addr, data, 0, 0)
	if e != 0 {
		return e
	}
	return nil
}

// threadsOf lists the threads of pid.
func threadsOf(pid int) ([]int, error) {
	entries, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		return nil, err
	}
	var tids []int
	for _, e := range entries {
		var tid int
		if _, err := fmt.Sscan(e.Name(), &tid); err == nil {
			tids = append(tids, tid)
		}
	}
	return tids, nil
}
