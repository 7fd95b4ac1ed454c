package stackwalk

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sdm-hpc/sdm/internal/procfs"
)

// The ptrace side of a sample: seize and interrupt every thread, read its
// registers, and let it go. Every call here must come from one OS thread
// (the tracer is a thread, not a process): Sample runs them on a goroutine
// locked to its thread.

// stoppedThread is a thread held in a ptrace stop.
type stoppedThread struct {
	tid  int
	regs Registers
	// sig is a signal the stop consumed (a signal-delivery-stop that came
	// before the interrupt): detaching delivers it, so that none is lost.
	sig int
}

// stopWait bounds how long a thread may take to stop after its interrupt.
const stopWait = 5 * time.Second

// stopThreads seizes and interrupts every thread of pid until a scan of
// /proc/PID/task finds no new one (a thread that has not stopped can still
// create threads; stopped ones cannot). Threads that exit on the way are
// left out. On error every thread seized so far is let go, and stuck
// reports a thread that could not be (see detachAll).
func stopThreads(ctx context.Context, pid int) (threads []*stoppedThread, stuck bool, err error) {
	var stopped []*stoppedThread
	seen := map[int]bool{}
	fail := func(err error) ([]*stoppedThread, bool, error) {
		return nil, !detachAll(stopped), err
	}
	for {
		tids, err := threadIDs(pid)
		if err != nil {
			return fail(err)
		}
		var fresh []int
		for _, tid := range tids {
			if !seen[tid] {
				seen[tid] = true
				fresh = append(fresh, tid)
			}
		}
		if len(fresh) == 0 {
			break
		}
		// Every seized thread is in stopped from its seize on, so that a
		// failure lets it go whether or not it has stopped yet.
		first := len(stopped)
		for _, tid := range fresh {
			if err := unix.PtraceSeize(tid); err != nil {
				if err == unix.ESRCH || (err == unix.EPERM && exiting(pid, tid)) {
					continue // the thread exited, or is exiting
				}
				return fail(seizeError(pid, err))
			}
			stopped = append(stopped, &stoppedThread{tid: tid})
			if err := unix.PtraceInterrupt(tid); err != nil && err != unix.ESRCH {
				return fail(fmt.Errorf("process %d: interrupt thread %d: %w", pid, tid, err))
			}
		}
		for _, th := range stopped[first:] {
			ok, err := waitStop(ctx, pid, th)
			if err != nil {
				return fail(err)
			}
			if !ok {
				th.tid = 0 // exited
			}
		}
		kept := stopped[:first]
		for _, th := range stopped[first:] {
			if th.tid != 0 {
				kept = append(kept, th)
			}
		}
		stopped = kept
	}
	if len(stopped) == 0 {
		return nil, false, gone(pid)
	}
	sort.Slice(stopped, func(i, j int) bool { return stopped[i].tid < stopped[j].tid })
	for _, th := range stopped {
		var err error
		if th.regs, err = ReadRegisters(th.tid); err != nil {
			return fail(fmt.Errorf("process %d: registers of thread %d: %w", pid, th.tid, err))
		}
	}
	return stopped, false, nil
}

// waitStop waits for a seized thread's stop and records the signal it
// consumed, if any. It reports false when the thread exited instead. A
// stop arrives within microseconds unless the thread is in an
// uninterruptible sleep, so the wait polls with a growing pause under a
// deadline rather than blocking in wait4 forever.
func waitStop(ctx context.Context, pid int, th *stoppedThread) (bool, error) {
	tid := th.tid
	start := time.Now()
	deadline := start.Add(stopWait)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	pause := 10 * time.Microsecond
	for {
		var ws unix.WaitStatus
		got, err := unix.Wait4(tid, &ws, unix.WALL|unix.WNOHANG, nil)
		switch {
		case err == unix.EINTR:
			continue
		case err == unix.ECHILD:
			return false, nil // gone, and reaped by its parent
		case err != nil:
			return false, fmt.Errorf("process %d: wait for thread %d: %w", pid, tid, err)
		case got == tid && ws.Stopped():
			if ws.TrapCause() != unix.PTRACE_EVENT_STOP {
				th.sig = int(ws.StopSignal())
			}
			return true, nil
		case got == tid && (ws.Exited() || ws.Signaled()):
			return false, nil
		}
		if time.Now().After(deadline) {
			return false, fmt.Errorf("process %d: thread %d did not stop in the %v after its interrupt (state %s)",
				pid, tid, time.Since(start).Round(time.Millisecond), procfs.ThreadState(pid, tid))
		}
		if err := ctx.Err(); err != nil {
			return false, fmt.Errorf("process %d: waiting for thread %d to stop: %w", pid, tid, err)
		}
		time.Sleep(pause)
		if pause < time.Millisecond {
			pause *= 2
		}
	}
}

// detachAll lets every thread go, delivering the signal its stop consumed.
// x/sys/unix's PtraceDetach passes no signal, hence the raw call. It
// reports false when a thread that still exists could not be detached
// (one that never reached its stop): only the end of the tracing thread
// lets such a thread go.
func detachAll(threads []*stoppedThread) bool {
	clean := true
	for _, th := range threads {
		_, _, errno := unix.Syscall6(unix.SYS_PTRACE, unix.PTRACE_DETACH, uintptr(th.tid), 0, uintptr(th.sig), 0, 0)
		if errno != 0 && !exiting(-1, th.tid) {
			clean = false
		}
	}
	return clean
}

// threadIDs lists /proc/PID/task.
func threadIDs(pid int) ([]int, error) {
	tids, err := procfs.ThreadIDs(pid)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) || errors.Is(err, unix.ESRCH) {
			return nil, gone(pid)
		}
		return nil, fmt.Errorf("process %d: list its threads: %w", pid, err)
	}
	return tids, nil
}

// seizeError says why PTRACE_SEIZE was refused, with what would fix it.
func seizeError(pid int, err error) error {
	if err == unix.ESRCH {
		return gone(pid)
	}
	if err != unix.EPERM {
		return fmt.Errorf("process %d: ptrace seize: %w", pid, err)
	}
	return &PermissionError{PID: pid, Reason: Refusal(pid)}
}

// yamaScope is the setting of the Yama security module, which forbids
// tracing a process that is not a descendant unless it is 0 (absent from
// kernels built without Yama).
var yamaScope = "/proc/sys/kernel/yama/ptrace_scope"

// Refusal says, as far as /proc tells, why the kernel will not let this
// process trace pid, and what would.
func Refusal(pid int) string {
	if tracer := procfs.StatusField(pid, "TracerPid"); tracer != "" && tracer != "0" {
		// TracerPid is the tracing thread; name its process.
		if n, err := strconv.Atoi(tracer); err == nil {
			if tgid := procfs.StatusField(n, "Tgid"); tgid != "" {
				tracer = tgid
			}
			if tg, err := strconv.Atoi(tracer); err == nil {
				if name := procfs.StatusField(tg, "Name"); name != "" {
					tracer += " (" + name + ")"
				}
			}
		}
		return "it is traced by process " + tracer + " (a process has one tracer at a time)"
	}
	if scope, err := os.ReadFile(yamaScope); err == nil {
		if s := strings.TrimSpace(string(scope)); s != "0" {
			return "kernel.yama.ptrace_scope is " + s +
				": run as root, or as the process's user with ptrace_scope 0 (sysctl kernel.yama.ptrace_scope=0)"
		}
	}
	if uid := procfs.StatusField(pid, "Uid"); uid != "" {
		if f := strings.Fields(uid); len(f) > 0 && f[0] != strconv.Itoa(os.Geteuid()) {
			return "it belongs to user " + f[0] + ": run as that user or as root"
		}
	}
	return "ptrace refused (a kernel thread, a setuid program, or a security module)"
}

// exiting reports a thread that has exited or is exiting: ptrace refuses
// those with EPERM, as it refuses a forbidden process.
func exiting(pid, tid int) bool {
	st := procfs.ThreadState(pid, tid)
	return st == "Z" || st == "X" || st == "unknown"
}
