package hold

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/sdm-hpc/sdm/internal/procfs"
	"github.com/sdm-hpc/sdm/stackwalk"
)

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
