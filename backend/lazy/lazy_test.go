package lazy

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sdm-hpc/sdm/backend"
	"github.com/sdm-hpc/sdm/backend/program"
	"github.com/sdm-hpc/sdm/op"
	"github.com/sdm-hpc/sdm/stackwalk"
	"github.com/sdm-hpc/sdm/testkit/testenv"
	"github.com/sdm-hpc/sdm/wire"
)

func newBackend(t *testing.T) *Backend {
	t.Helper()
	b := New(backend.Config{Rank: 0, Size: 1}, stackwalk.NewSampler(), nil, nil)
	t.Cleanup(func() { b.Close() })
	return b
}

// do runs op on b and decodes its answer into A.
func do[B, A any](t *testing.T, b *Backend, o op.Def[B, A], body B) (A, error) {
	t.Helper()
	var a A
	enc := o.Body(body)
	got := make(chan error, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	b.Do(ctx, o.Name, enc, func(answer []byte, err error) {
		if err == nil {
			a, err = o.DecodeAnswer(answer)
		}
		got <- err
	})
	select {
	case err := <-got:
		return a, err
	case <-ctx.Done():
		t.Fatalf("%s: no answer within 30 s", o.Name)
	}
	return a, nil
}

// event waits for the next event named name, skipping output.
func event(t *testing.T, b *Backend, name string) wire.State {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		select {
		case ev := <-b.Events():
			if ev.Sent != nil {
				ev.Sent()
			}
			if ev.Op != name {
				continue
			}
			var st wire.State
			if err := wire.Decode(ev.Body, &st); err != nil {
				t.Fatal(err)
			}
			return st
		case <-deadline:
			t.Fatalf("no %s event within 30 s", name)
		}
	}
}

// runPlain starts and runs the example plain with args on b, without gdb.
func runPlain(t *testing.T, b *Backend, args ...string) {
	t.Helper()
	if _, err := do(t, b, op.Start, wire.Start{Program: filepath.Join(testenv.Examples(t), "plain"), Args: args}); err != nil {
		t.Fatal(err)
	}
	if st, err := do(t, b, op.Run, op.None{}); err != nil || st.State != wire.StateRunning {
		t.Fatalf("run: %+v %v", st, err)
	}
}

// wrote waits until the program has written text: it is past its start
// (the dynamic loader), in main.
func wrote(t *testing.T, b *Backend, text string) {
	t.Helper()
	deadline := time.After(30 * time.Second)
	var got string
	for !strings.Contains(got, text) {
		select {
		case ev := <-b.Events():
			if ev.Sent != nil {
				ev.Sent()
			}
			var o wire.Output
			if ev.Op == wire.EventOutput && wire.Decode(ev.Body, &o) == nil {
				got += o.Text
			}
		case <-deadline:
			t.Fatalf("the program did not write %q within 30 s (it wrote %q)", text, got)
		}
	}
}

// A program run without gdb is sampled running, halted with SIGSTOP,
// sampled stopped, continued and killed; no gdb starts on the way.
func TestRunSampleHaltKill(t *testing.T) {
	b := newBackend(t)
	runPlain(t, b, "60")
	wrote(t, b, "hello")
	tree, err := do(t, b, op.Sample, wire.Sample{Count: 3, Interval: 20 * time.Millisecond})
	if err != nil || tree.Samples != 3 || len(tree.Roots) == 0 || tree.Roots[0].Frame.Func != "main" {
		t.Fatalf("sample: %+v %v", tree, err)
	}
	if _, err := do(t, b, op.Halt, op.None{}); err != nil {
		t.Fatal(err)
	}
	if st := event(t, b, wire.EventStopped); st.Signal != "SIGSTOP" || st.Frame.Func == "" {
		t.Fatalf("stop: %+v", st)
	}
	st, err := do(t, b, op.Where, op.None{})
	if err != nil || len(st.Frames) < 2 || st.Frames[len(st.Frames)-1].Func != "main" {
		t.Fatalf("where on the stopped process: %+v %v", st, err)
	}
	if s, err := do(t, b, op.Continue, op.None{}); err != nil || s.State != wire.StateRunning {
		t.Fatalf("continue: %+v %v", s, err)
	}
	if s, err := do(t, b, op.Kill, op.None{}); err != nil || s.Reason != "killed" {
		t.Fatalf("kill: %+v %v", s, err)
	}
	if _, err := do(t, b, op.Where, op.None{}); err == nil || !strings.Contains(err.Error(), "not being run") {
		t.Fatalf("where after kill: %v", err)
	}
	b.mu.Lock()
	handed := b.handed
	b.mu.Unlock()
	if handed {
		t.Fatal("gdb was started")
	}
}

// A process that is gone, and one that never was, are clear errors
// naming the rank and the process.
func TestAttachGone(t *testing.T) {
	b := newBackend(t)
	cmd := testenv.Command(t, "true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	_, err := do(t, b, op.Attach, wire.Attach{Pids: []int{cmd.Process.Pid}})
	if err == nil || !strings.Contains(err.Error(), "rank 0") || !strings.Contains(err.Error(), "exited") {
		t.Fatalf("attach to an exited process: %v", err)
	}
	if _, err := do(t, b, op.Attach, wire.Attach{Pids: []int{}}); err == nil || !strings.Contains(err.Error(), "none for rank 0") {
		t.Fatalf("attach without a pid for the rank: %v", err)
	}
}

// A process of a running job is taken by pid, sampled while it runs,
// and let go on by detach; it never stops.
func TestAttachSampleDetach(t *testing.T) {
	bin := testenv.Examples(t)
	cmd := testenv.Command(t, filepath.Join(bin, "plain"), "60")
	cmd.Env = append(os.Environ(), "SDM_RANK=0", "SDM_SIZE=1")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	b := newBackend(t)
	at, err := do(t, b, op.Attach, wire.Attach{Pids: []int{cmd.Process.Pid}})
	if err != nil || at.State.State != wire.StateRunning {
		t.Fatalf("attach: %+v %v", at, err)
	}
	st, err := do(t, b, op.Where, op.None{})
	if err != nil || len(st.Frames) == 0 {
		t.Fatalf("where: %+v %v", st, err)
	}
	if s, err := do(t, b, op.Detach, op.None{}); err != nil || s.State != wire.StateDetached {
		t.Fatalf("detach: %+v %v", s, err)
	}
	if st := program.StatFields("/proc/" + strconv.Itoa(cmd.Process.Pid) + "/stat"); len(st) == 0 || st[0] == "T" || st[0] == "t" {
		t.Fatalf("the process is in state %v after the detach", st)
	}
}

// A break before run needs gdb then: the program is loaded into it, and
// run under it stops at the breakpoint.
func TestBreakBeforeRun(t *testing.T) {
	testenv.RequireTool(t, "gdb")
	bin := testenv.Examples(t)
	b := newBackend(t)
	if _, err := do(t, b, op.Start, wire.Start{Program: filepath.Join(bin, "plain")}); err != nil {
		t.Fatal(err)
	}
	if _, err := do(t, b, op.Break, wire.Break{Location: "compute"}); err != nil {
		t.Fatal(err)
	}
	if _, err := do(t, b, op.Run, op.None{}); err != nil {
		t.Fatal(err)
	}
	if st := event(t, b, wire.EventStopped); st.Breakpoint != 1 || st.Frame.Func != "compute" {
		t.Fatalf("stop: %+v, want breakpoint 1 in compute", st)
	}
	if st, err := do(t, b, op.Where, op.None{}); err != nil || st.Frames[0].Func != "compute" {
		t.Fatalf("where under gdb: %+v %v", st, err)
	}
}

// The program runs in the server's session (one scheduler autogroup with
// its server), in a process group of its own (a signal to the server's
// group leaves it), with the rank's terminal as its output.
func TestProgramInServersSession(t *testing.T) {
	b := newBackend(t)
	runPlain(t, b, "60")
	pid := b.PID()
	sid, err := unix.Getsid(pid)
	if err != nil {
		t.Fatal(err)
	}
	pgid, err := unix.Getpgid(pid)
	if err != nil {
		t.Fatal(err)
	}
	if own, _ := unix.Getsid(0); sid != own {
		t.Errorf("program %d is in session %d, the server in %d", pid, sid, own)
	}
	if pgid != pid {
		t.Errorf("program %d is in process group %d, want its own", pid, pgid)
	}
	if fd, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/1", pid)); err != nil || !strings.HasPrefix(fd, "/dev/pts/") {
		t.Errorf("program's output goes to %q (%v), want the rank's terminal", fd, err)
	}
}

// A status asked while an exit is being told (its event not yet taken up:
// here the events channel is full) waits for it, and says exited: an
// answer saying running after the news would leave a wait for news
// waiting in vain.
func TestStatusWaitsForTheNewsBeingTold(t *testing.T) {
	b := newBackend(t)
	runPlain(t, b, "1")
	wrote(t, b, "hello") // its only output: then it rests a second and exits
	// Nothing takes the events up from here on (until the end, so that
	// Close ends): once the channel is full, the exit's news waits in Send.
	t.Cleanup(func() {
		go func() {
			for range b.Events() {
			}
		}()
	})
	filler := backend.Event{Op: wire.EventWarning, Body: wire.MustEncode("filler")}
	for full := false; !full; {
		select {
		case b.events <- filler:
		default:
			full = true
		}
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		b.mu.Lock()
		telling := b.telling != nil
		b.mu.Unlock()
		if telling {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the program's exit was not being told within 30 s")
		}
		time.Sleep(time.Millisecond)
	}
	answer := make(chan wire.State, 1)
	go func() {
		st, _ := b.native().Status(context.Background())
		answer <- st
	}()
	select {
	case st := <-answer:
		t.Fatalf("status answered %+v while the exit was being told", st)
	case <-time.After(100 * time.Millisecond):
	}
	go func() {
		for range b.Events() {
		}
	}()
	select {
	case st := <-answer:
		if st.State != wire.StateExited {
			t.Errorf("status after the exit's news: %+v, want exited", st)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("no status within 30 s of the exit's news")
	}
}

// Once gdb answers, its news comes before its answers, as gdbmi sends
// them: a kill's end is out before the kill is answered, every time.
func TestGDBNewsBeforeItsAnswer(t *testing.T) {
	testenv.RequireTool(t, "gdb")
	bin := testenv.Examples(t)
	b := newBackend(t)
	for round := 0; round < 5; round++ {
		if _, err := do(t, b, op.Start, wire.Start{Program: filepath.Join(bin, "plain")}); err != nil {
			t.Fatal(err)
		}
		if round == 0 {
			if _, err := do(t, b, op.Break, wire.Break{Location: "compute"}); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := do(t, b, op.Run, op.None{}); err != nil {
			t.Fatal(err)
		}
		event(t, b, wire.EventStopped)
		news := make(chan bool, 1)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		b.Do(ctx, wire.OpKill, nil, func([]byte, error) {
			for {
				select {
				case ev := <-b.Events():
					if ev.Op == wire.EventExited {
						news <- true
						return
					}
				default:
					news <- false
					return
				}
			}
		})
		select {
		case ok := <-news:
			if !ok {
				t.Fatalf("round %d: kill answered before its end was told", round)
			}
		case <-ctx.Done():
			t.Fatal("kill: no answer within 30 s")
		}
		cancel()
	}
}
