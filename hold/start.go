package hold

import (
	"context"
	"fmt"

	"golang.org/x/sys/unix"
)

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
