package gdbmi_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sdm-hpc/sdm/backend/gdbmi"
	"github.com/sdm-hpc/sdm/testkit/testenv"
	"github.com/sdm-hpc/sdm/wire"
)

// killed sends SIGKILL to the rank's program from outside, as the OOM
// killer or a user would, and checks that its end is reported within a
// second, once, and that status and the commands that need the process
// say how it died.
func (r *rank) killed(rank int, child bool) int {
	r.t.Helper()
	pid := gdbmi.Pid(r.b)
	if pid <= 0 {
		r.t.Fatal("no process to kill")
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		r.t.Fatal(err)
	}
	if op, st := r.next(time.Second, wire.EventExited, wire.EventStopped); op != wire.EventExited || st.Signal != "SIGKILL" {
		r.t.Fatalf("after SIGKILL: %s %+v", op, st)
	}
	var st wire.State
	r.must(wire.OpStatus, nil, &st)
	if st.State != wire.StateExited || st.Signal != "SIGKILL" {
		r.t.Fatalf("status after SIGKILL: %+v", st)
	}
	death := fmt.Sprintf("rank %d's process (pid %d) was killed by SIGKILL", rank, pid)
	for _, op := range []string{wire.OpCont, wire.OpWhere, wire.OpNext} {
		if _, err := r.do(op, nil); err == nil || err.Error() != death {
			r.t.Errorf("%s after SIGKILL: %v, want %q", op, err, death)
		}
	}
	r.must(wire.OpHalt, nil, &st)
	if st.State != wire.StateExited {
		r.t.Errorf("halt after SIGKILL: %+v", st)
	}
	// gdb has let go of the zombie, so that its parent learns of the end:
	// gdb reaped its own child.
	if stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); child && err == nil && strings.Contains(string(stat), ") Z ") {
		r.t.Errorf("process %d is left a zombie: %s", pid, stat)
	}
	return pid
}

// sent checks that an event called op has been sent already.
func (r *rank) sent(op string) {
	r.t.Helper()
	for {
		select {
		case ev := <-r.b.Events():
			if ev.Op == op {
				return
			}
		default:
			r.t.Fatalf("no %s event before the answer", op)
		}
	}
}

// A program killed while stopped at a breakpoint, which gdb does not
// notice: its end is reported at once, and run starts it again as after
// any end, with no second end on the way, nor a false one when gdb kills
// the process itself.
func TestProgramKilledAtBreakpoint(t *testing.T) {
	bin := testenv.Examples(t)
	r := newRank(t, 2, 4, "")
	r.start(filepath.Join(bin, "plain"), "30")
	r.must(wire.OpBreak, wire.Break{Location: "compute"}, nil)
	r.must(wire.OpRun, nil, nil)
	r.event(wire.EventStopped)
	old := r.killed(2, true)

	r.must(wire.OpRun, nil, nil)
	if op, st := r.next(20*time.Second, wire.EventExited, wire.EventStopped); op != wire.EventStopped || st.Frame.Func != "compute" {
		t.Fatalf("run after the death: %s %+v", op, st)
	}
	if pid := gdbmi.Pid(r.b); pid == old {
		t.Fatalf("run after the death: still pid %d", pid)
	}
	// Run again while stopped: gdb ends the process itself, which is no
	// news.
	r.must(wire.OpRun, nil, nil)
	if op, st := r.next(20*time.Second, wire.EventExited, wire.EventStopped); op != wire.EventStopped || st.Frame.Func != "compute" {
		t.Fatalf("run while stopped: %s %+v", op, st)
	}
	r.must(wire.OpKill, nil, nil)
	if op, st := r.next(20*time.Second, wire.EventExited, wire.EventStopped); op != wire.EventExited || st.Reason != "killed" || st.Signal != "" {
		t.Fatalf("kill: %s %+v", op, st)
	}
	// Commands that need no process still go to gdb.
	if got := r.print("counter"); got != "0" {
		t.Fatalf("print after kill: %q", got)
	}
}

// A program killed while it runs: gdb notices too, and the end is
// reported once, with the death's words for the commands after it.
func TestProgramKilledWhileRunning(t *testing.T) {
	bin := testenv.Examples(t)
	r := newRank(t, 0, 1, "")
	r.start(filepath.Join(bin, "plain"), "30")
	r.must(wire.OpRun, nil, nil)
	r.event(wire.EventRunning)
	r.killed(0, true)
	if _, err := r.do(wire.OpRun, nil); err != nil {
		t.Fatalf("run after the death: %v", err)
	}
	if op, _ := r.next(20*time.Second, wire.EventExited, wire.EventRunning); op != wire.EventRunning {
		t.Fatalf("run after the death: %s", op)
	}
}

// An attached process killed, stopped or running: reported at once, and
// its parent gets it; one the backend let go of is no news.
func TestAttachedProcessKilled(t *testing.T) {
	for _, stop := range []bool{true, false} {
		t.Run(fmt.Sprintf("stopped=%v", stop), func(t *testing.T) {
			cmd, done := sleeper(t)
			r := newRank(t, 1, 2, "")
			r.must(wire.OpAttach, wire.Attach{Pids: []int{0, cmd.Process.Pid}, Stop: stop}, nil)
			r.killed(1, false)
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				t.Fatal("the process's parent never learnt of its end")
			}
		})
	}
	cmd, done := sleeper(t)
	r := newRank(t, 0, 1, "")
	r.must(wire.OpAttach, wire.Attach{Pids: []int{cmd.Process.Pid}, Stop: true}, nil)
	r.must(wire.OpDetach, nil, nil)
	cmd.Process.Kill()
	<-done
	var st wire.State
	r.must(wire.OpStatus, nil, &st)
	if st.State != wire.StateDetached {
		t.Fatalf("status of a detached process that was then killed: %+v", st)
	}
	select {
	case ev := <-r.b.Events():
		t.Fatalf("an event about a detached process: %s", ev.Op)
	default:
	}
}

// gdb ended through the raw passthrough, or killed from outside, is
// reported before anything else is answered: the error event, and the
// state after gdb's end.
func TestGDBEndReportedAtOnce(t *testing.T) {
	bin := testenv.Examples(t)
	for _, end := range []string{"-gdb-exit", "quit", "SIGKILL"} {
		t.Run(end, func(t *testing.T) {
			r := newRank(t, 0, 2, "")
			r.start(filepath.Join(bin, "plain"), "30")
			r.must(wire.OpBreak, wire.Break{Location: "compute"}, nil)
			r.must(wire.OpRun, nil, nil)
			r.event(wire.EventStopped)
			if end == "SIGKILL" {
				syscall.Kill(testenv.Child(t, os.Getpid(), "gdb"), syscall.SIGKILL)
				if _, st := r.next(time.Second, wire.EventError); !strings.Contains(st.Reason, "killed") {
					t.Fatalf("error event: %q", st.Reason)
				}
			} else if sharedPool != nil {
				// A gdb other ranks share does not end at one's word.
				if _, err := r.do(wire.OpRaw, wire.Text{Text: end}); err == nil || !strings.Contains(err.Error(), "shares") {
					t.Fatalf("%s on a shared gdb: %v", end, err)
				}
				return
			} else {
				r.do(wire.OpRaw, wire.Text{Text: end})
				r.sent(wire.EventError)
			}
			if _, err := r.do(wire.OpStatus, nil); err == nil || !strings.Contains(err.Error(), "gdb") {
				t.Fatalf("status after gdb's end: %v", err)
			}
			if _, err := r.do(wire.OpCont, nil); err == nil || errors.Is(err, gdbmi.ErrClosed) {
				t.Fatalf("continue after gdb's end: %v", err)
			}
		})
	}
}

// A death during a raw command: one gdb does not notice (the shell's
// kill) is reported after the command with its cause; one gdb causes
// (kill) as killed; one it reports itself once.
func TestProgramKilledDuringRawCommand(t *testing.T) {
	bin := testenv.Examples(t)
	r := newRank(t, 2, 4, "")
	r.start(filepath.Join(bin, "plain"), "30")
	r.must(wire.OpBreak, wire.Break{Location: "compute"}, nil)
	for _, c := range []struct{ raw, reason, signal string }{
		{"shell kill -9 %d", "killed by a signal", "SIGKILL"},
		{"kill", "killed", ""},
	} {
		r.must(wire.OpRun, nil, nil)
		if op, st := r.next(20*time.Second, wire.EventExited, wire.EventStopped); op != wire.EventStopped {
			t.Fatalf("run: %s %+v", op, st)
		}
		raw := c.raw
		if strings.Contains(raw, "%d") {
			raw = fmt.Sprintf(raw, gdbmi.Pid(r.b))
		}
		r.must(wire.OpRaw, wire.Text{Text: raw}, nil)
		if op, st := r.next(time.Second, wire.EventExited, wire.EventStopped); op != wire.EventExited || st.Reason != c.reason || st.Signal != c.signal {
			t.Fatalf("gdb %s: %s %+v", raw, op, st)
		}
		var st wire.State
		r.must(wire.OpStatus, nil, &st)
		if st.State != wire.StateExited || st.Signal != c.signal {
			t.Fatalf("status after gdb %s: %+v", raw, st)
		}
	}
	select {
	case ev := <-r.b.Events():
		if ev.Op == wire.EventExited {
			t.Fatal("a second exited event")
		}
	default:
	}
}
