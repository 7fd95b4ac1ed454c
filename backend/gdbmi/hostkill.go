package gdbmi

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// A shared gdb does not run its own kill: gdb 16 aborts
// (linux-nat.c: lwp_inferior: Assertion `inf != nullptr') when it kills
// a process whose threads are ending meanwhile, as a job's ranks do when
// their starter kills the job, and gdb 13 can abort likewise
// (set_current_inferior). Nor can gdb be made to reap such a process by
// resuming it: a resume inserts the breakpoints of every inferior, and
// fails ("Command aborted") while another rank's process lies dead too.
// The view kills the process with SIGKILL, as gdb's kill does, and has
// gdb let go of it as of any process that ended (reap). SIGKILL leaves
// the process no instruction to run, so a detach lets nothing go on.

// isKill says whether a CLI command is gdb's kill of the process.
func isKill(command string) bool {
	w := strings.Fields(command)
	return len(w) == 1 && (w[0] == "kill" || w[0] == "k")
}

// kill ends the rank's process and has gdb let go of it. It says what
// gdb's kill says; ok is false when there is no process to kill.
func (v *view) kill(ctx context.Context) (out string, ok bool, err error) {
	v.mu.Lock()
	pid, gone := v.pid, v.gone
	if len(v.local) == 0 || pid <= 0 {
		v.mu.Unlock()
		return "", false, nil
	}
	v.killing = true
	v.mu.Unlock()
	// No resume is under way past here, and none starts (errKilling).
	v.resumes.Lock()
	v.resumes.Unlock()
	defer func() {
		// An end gdb tells meanwhile (a *stopped) is the kill's news,
		// which the view drops: it comes before the answer to a command
		// sent after it.
		wait, cancel := context.WithTimeout(context.Background(), viewTimeout)
		v.h.g.Run(wait, "-list-features")
		v.h.g.WaitHandled(wait, v.h.g.Mark())
		cancel()
		v.mu.Lock()
		v.killing = false
		v.mu.Unlock()
	}()
	v.stopFirst(ctx, pid)
	// The process is gdb's to reap, so its pid names it until gdb says
	// it exited (gone); the pidfd holds it from here on.
	fd, err := unix.PidfdOpen(pid, 0)
	if err == nil {
		defer unix.Close(fd)
		if err = unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0); err == nil {
			// gdb lets go most surely of a process that has ended.
			waitEnded(fd, endingWait)
		}
	}
	if err != nil && err != unix.ESRCH {
		return "", true, fmt.Errorf("kill process %d: %w", pid, err)
	}
	// What gdb said of the process before now is known.
	v.h.g.WaitHandled(ctx, v.h.g.Mark())
	for !v.reap(ctx, pid) {
		select {
		case <-gone:
		case <-ctx.Done():
			return "", true, fmt.Errorf("process %d, killed, was not let go by gdb: %w", pid, ctx.Err())
		case <-time.After(reapRetry):
		}
	}
	return killedText(v.inf, pid), true, nil
}

// stopFirst stops the process before its SIGKILL: gdb 13 may never
// reap a process killed while it believes a thread of it runs, as when
// gdb has just let it go on from a breakpoint (a rank passing a
// tracepoint all the time), and the kill would wait for its deadline;
// the end of a stopped process it takes at once (killedStopped). Where
// the process does not stop within killStopWait, the kill goes on; one
// that has ended already (killed from outside, say) never stops.
func (v *view) stopFirst(ctx context.Context, pid int) {
	ctx, cancel := context.WithTimeout(ctx, killStopWait)
	defer cancel()
	asked := false
	for {
		v.mu.Lock()
		running, progress := v.othersRunning(0), v.progress
		v.mu.Unlock()
		if !running || hasEnded(pid) {
			return
		}
		if !asked {
			v.h.g.Run(ctx, "-exec-interrupt --thread-group "+v.group)
			asked = true
			continue
		}
		select {
		case <-progress:
		case <-v.h.g.Done():
			return
		case <-ctx.Done():
			return
		case <-time.After(10 * time.Millisecond): // the stop is routed, not handed to the Backend
		}
	}
}

// killStopWait bounds stopFirst's wait for the process to stop.
const killStopWait = 5 * time.Second

// killedText is what gdb's kill says.
func killedText(inf, pid int) string {
	return "[Inferior " + strconv.Itoa(inf) + " (process " + strconv.Itoa(pid) + ") killed]\n"
}

// reapRetry is how long a kill waits before it has gdb try again to let
// go of the process.
const reapRetry = time.Second
