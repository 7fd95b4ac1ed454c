package gdbmi_test

import (
	"bufio"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sdm-hpc/sdm/mpir"
	"github.com/sdm-hpc/sdm/testkit/testenv"
	"github.com/sdm-hpc/sdm/wire"
)

// sleeper starts plain resting for a minute and returns once it said
// hello, with a channel closed when it ends.
func sleeper(t *testing.T) (*exec.Cmd, <-chan struct{}) {
	t.Helper()
	cmd := testenv.Command(t, filepath.Join(testenv.Examples(t), "plain"), "60")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(out)
	if !sc.Scan() || !strings.Contains(sc.Text(), "hello") {
		t.Fatalf("plain said %q", sc.Text())
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	t.Cleanup(func() { cmd.Process.Kill(); <-done })
	return cmd, done
}

func TestAttachDetach(t *testing.T) {
	cmd, done := sleeper(t)
	pid := cmd.Process.Pid
	r := newRank(t, 1, 2, "")
	var a wire.Attached
	r.must(wire.OpAttach, wire.Attach{Pids: []int{0, pid}, Stop: true}, &a)
	if a.State.State != wire.StateStopped {
		t.Fatalf("after attach: %+v", a)
	}
	var st wire.Stack
	r.must(wire.OpWhere, nil, &st)
	if !strings.Contains(fmt.Sprint(st.Frames), "rest") {
		t.Errorf("stack %+v", st.Frames)
	}
	// run goes on from where it is: the process runs already.
	var s wire.State
	r.must(wire.OpRun, nil, &s)
	if s.State != wire.StateRunning {
		t.Errorf("run: %+v", s)
	}
	r.must(wire.OpHalt, nil, nil)
	r.event(wire.EventStopped)
	r.must(wire.OpDetach, nil, &s)
	if s.State != wire.StateDetached {
		t.Errorf("detach: %+v", s)
	}
	if stopped, tracer := mpir.Traced(pid); stopped || tracer != 0 {
		t.Errorf("after detach: stopped %v, traced by %d", stopped, tracer)
	}
	if _, err := r.do(wire.OpDetach, nil); err == nil {
		t.Error("a second detach succeeded")
	}
	select {
	case <-done:
		t.Fatal("plain ended after detach")
	default:
	}
}

func TestAttachErrors(t *testing.T) {
	r := newRank(t, 0, 1, "")
	if _, err := r.do(wire.OpAttach, wire.Attach{Pids: []int{999999999}}); err == nil || !strings.Contains(err.Error(), "pid 999999999") {
		t.Errorf("missing process: %v", err)
	}
	r = newRank(t, 3, 4, "")
	if _, err := r.do(wire.OpAttach, wire.Attach{Pids: []int{1, 2}}); err == nil || !strings.Contains(err.Error(), "none for rank 3") {
		t.Errorf("short table: %v", err)
	}
	var a wire.Attached
	r.must(wire.OpAttach, wire.Attach{Pids: []int{1, 2, 3, 0}}, &a)
	if a.State.State != wire.StateNone {
		t.Errorf("rank left out: %+v", a)
	}
}

// A process attached to be killed with the session ends when the backend
// closes; one attached to be let go goes on.
func TestAttachKillOnClose(t *testing.T) {
	cmd, done := sleeper(t)
	r := newRank(t, 0, 1, "")
	r.must(wire.OpAttach, wire.Attach{Pids: []int{cmd.Process.Pid}, Kill: true}, nil)
	r.b.Close()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the process outlived the session that was to kill it")
	}

	cmd, done = sleeper(t)
	r = newRank(t, 0, 1, "")
	r.must(wire.OpAttach, wire.Attach{Pids: []int{cmd.Process.Pid}}, nil)
	r.b.Close()
	if stopped, tracer := mpir.Traced(cmd.Process.Pid); stopped || tracer != 0 {
		t.Errorf("after close: stopped %v, traced by %d", stopped, tracer)
	}
	select {
	case <-done:
		t.Fatal("the process ended with the session")
	default:
	}
}
