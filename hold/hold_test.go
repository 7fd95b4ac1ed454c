package hold

import (
	"bufio"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sdm-hpc/sdm/internal/procfs"
	"github.com/sdm-hpc/sdm/stackwalk"
	"github.com/sdm-hpc/sdm/testkit/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// victim builds testdata/victim.c once per test.
func victim(t testing.TB) string {
	t.Helper()
	testenv.RequireTool(t, "gcc")
	out := filepath.Join(t.TempDir(), "victim")
	if b, err := testenv.Command(t, "gcc", "-g", "-O0", "-pthread", "-o", out, "testdata/victim.c").CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, b)
	}
	return out
}

// running is a victim under test: its standard input and output.
type running struct {
	p   *Process
	in  io.WriteCloser
	out *bufio.Reader
}

// start starts the victim held, doing what, and waits for its "ready".
func start(t *testing.T, bin string, what ...string) *running {
	t.Helper()
	cmd := exec.Command(bin, what...)
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	p, err := Start(cmd)
	if err != nil {
		t.Fatal(err)
	}
	pid := p.PID()
	t.Cleanup(func() {
		p.Kill()
		<-p.Done()
		// A process released or handed off is no longer the tracer's.
		unix.Kill(pid, unix.SIGKILL)
	})
	r := &running{p: p, in: in, out: bufio.NewReader(out)}
	r.line(t, "ready")
	return r
}

// line reads the victim's output until a line starts with prefix.
func (r *running) line(t *testing.T, prefix string) string {
	t.Helper()
	got := make(chan string, 1)
	go func() {
		for {
			l, err := r.out.ReadString('\n')
			if err != nil {
				got <- "error: " + err.Error()
				return
			}
			if strings.HasPrefix(l, prefix) {
				got <- l
				return
			}
		}
	}()
	select {
	case l := <-got:
		if !strings.HasPrefix(l, prefix) {
			t.Fatalf("waiting for %q: %s", prefix, l)
		}
		return l
	case <-time.After(time.Minute):
		t.Fatalf("no line %q within a minute", prefix)
	}
	return ""
}

// go_ lets the victim past its wait for a line.
func (r *running) proceed(t *testing.T) {
	t.Helper()
	if _, err := io.WriteString(r.in, "go\n"); err != nil {
		t.Fatal(err)
	}
}

// event waits for the process's next event.
func event(t *testing.T, p *Process) Event {
	t.Helper()
	select {
	case ev, ok := <-p.Events():
		if !ok {
			t.Fatalf("events closed: %v", p.Err())
		}
		return ev
	case <-time.After(time.Minute):
		t.Fatal("no event within a minute")
	}
	return Event{}
}

// proc is a field of /proc/PID/status (of a thread with task).
func proc(t *testing.T, pid, tid int, field string) string {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/task/" + strconv.Itoa(tid) + "/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, field+":"); ok {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return c
}

// A fault stops the process before the program's own handler runs, with
// the kernel's siginfo; every thread is held; its stack shows the fault;
// going on delivers the signal, and the handler runs.
func TestFaultBeforeHandler(t *testing.T) {
	bin := victim(t)
	for _, c := range []struct {
		what   string
		worker bool
	}{{"segv", false}, {"thread-segv", true}} {
		t.Run(c.what, func(t *testing.T) {
			r := start(t, bin, c.what)
			r.proceed(t)
			ev := event(t, r.p)
			f := ev.Fault
			if f == nil {
				t.Fatalf("event %+v, want a fault", ev)
			}
			pid := r.p.PID()
			if f.Signal != unix.SIGSEGV || f.Code != 1 || f.Addr != 0 || (f.TID == pid) == c.worker {
				t.Errorf("fault %+v: want SIGSEGV, SEGV_MAPERR at 0, in the %s thread", f, map[bool]string{true: "worker", false: "main"}[c.worker])
			}
			tids, err := threadIDs(pid)
			if err != nil || len(tids) < 2 && c.worker {
				t.Fatalf("threads %v %v", tids, err)
			}
			for _, tid := range tids {
				if st := procfs.ThreadState(pid, tid); st != "t" {
					t.Errorf("thread %d in state %s while held, want t", tid, st)
				}
			}
			snap, err := r.p.Sample(ctx(t), stackwalk.NewSampler())
			if err != nil {
				t.Fatal(err)
			}
			var top string
			for _, th := range snap.Threads {
				if th.TID == f.TID && len(th.Frames) > 0 {
					top = th.Frames[0].Function
				}
			}
			if top != "fault" {
				t.Errorf("faulting thread's innermost frame %q, want fault: %+v", top, snap.Threads)
			}
			if err := r.p.Resume(ctx(t)); err != nil {
				t.Fatal(err)
			}
			r.line(t, "handler")
			end := event(t, r.p).Ended
			if end == nil || !end.Status.Exited() || end.Status.ExitStatus() != 3 {
				t.Fatalf("end %+v, want exit status 3 from the handler", end)
			}
		})
	}
}

// abort and a compiled-in breakpoint stop the process as a fault does.
func TestAbortAndTrap(t *testing.T) {
	bin := victim(t)
	for what, sig := range map[string]unix.Signal{"abort": unix.SIGABRT, "trap": unix.SIGTRAP} {
		t.Run(what, func(t *testing.T) {
			r := start(t, bin, what)
			r.proceed(t)
			f := event(t, r.p).Fault
			if f == nil || f.Signal != sig || f.TID != r.p.PID() {
				t.Fatalf("fault %+v, want %s in the main thread", f, unix.SignalName(sig))
			}
			if err := r.p.Resume(ctx(t)); err != nil {
				t.Fatal(err)
			}
			end := event(t, r.p).Ended
			if end == nil || !end.Status.Signaled() || end.Status.Signal() != sig {
				t.Fatalf("end %+v, want killed by %s once delivered", end, unix.SignalName(sig))
			}
		})
	}
}

// Other signals reach the program at once, and exit codes and deaths by
// a signal that is not a fault are told as ends.
func TestSignalsDeliveredAndEnds(t *testing.T) {
	bin := victim(t)
	t.Run("usr1", func(t *testing.T) {
		r := start(t, bin, "usr1")
		r.proceed(t)
		for k := 1; k <= 5; k++ {
			unix.Kill(r.p.PID(), unix.SIGUSR1)
			r.line(t, "usr1 "+strconv.Itoa(k))
		}
		if end := event(t, r.p).Ended; end == nil || end.Status.ExitStatus() != 0 {
			t.Fatalf("end %+v, want exit 0", end)
		}
	})
	t.Run("exit", func(t *testing.T) {
		r := start(t, bin, "exit", "7")
		r.proceed(t)
		if end := event(t, r.p).Ended; end == nil || !end.Status.Exited() || end.Status.ExitStatus() != 7 {
			t.Fatalf("end %+v, want exit 7", end)
		}
	})
	t.Run("sigterm", func(t *testing.T) {
		r := start(t, bin, "spin")
		r.proceed(t)
		unix.Kill(r.p.PID(), unix.SIGTERM)
		if end := event(t, r.p).Ended; end == nil || !end.Status.Signaled() || end.Status.Signal() != unix.SIGTERM {
			t.Fatalf("end %+v, want killed by SIGTERM", end)
		}
	})
}

// A sample of a running process leaves it running; a hold keeps it
// stopped; a release leaves it running and untraced, nothing pending.
func TestSampleHoldRelease(t *testing.T) {
	bin := victim(t)
	r := start(t, bin, "spin")
	r.proceed(t)
	r.line(t, "two threads")
	pid := r.p.PID()
	s := stackwalk.NewSampler()
	defer s.Close()
	for range 3 {
		snap, err := r.p.Sample(ctx(t), s)
		if err != nil || len(snap.Threads) != 2 {
			t.Fatalf("sample: %+v %v, want two threads", snap, err)
		}
	}
	if held, err := r.p.Held(ctx(t)); err != nil || held {
		t.Fatalf("held %v %v after samples, want running", held, err)
	}
	if err := r.p.Hold(ctx(t)); err != nil {
		t.Fatal(err)
	}
	if st := procfs.ThreadState(pid, pid); st != "t" {
		t.Errorf("state %s after Hold, want t", st)
	}
	if err := r.p.Release(ctx(t)); err != nil {
		t.Fatal(err)
	}
	<-r.p.Done()
	if r.p.Err() != ErrReleased {
		t.Errorf("after release: %v", r.p.Err())
	}
	for _, field := range []string{"TracerPid", "SigPnd", "ShdPnd"} {
		if v := proc(t, pid, pid, field); strings.Trim(v, "0") != "" {
			t.Errorf("%s %s after release, want 0", field, v)
		}
	}
	if st := procfs.ThreadState(pid, pid); st == "T" || st == "t" {
		t.Errorf("state %s after release, want running", st)
	}
	unix.Kill(pid, unix.SIGKILL)
}

// A process seized while stopped by SIGSTOP stays stopped, and stays so
// when released; one seized running is held at its fault.
func TestSeize(t *testing.T) {
	bin := victim(t)
	cmd := testenv.Command(t, bin, "thread-segv")
	in, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	defer cmd.Process.Kill()
	pid := cmd.Process.Pid
	rd := bufio.NewReader(out)
	if l, err := rd.ReadString('\n'); err != nil || !strings.HasPrefix(l, "ready") {
		t.Fatalf("%q %v", l, err)
	}
	unix.Kill(pid, unix.SIGSTOP)
	testenv.WaitStopped(t, pid)
	p, err := Seize(pid)
	if err != nil {
		t.Fatal(err)
	}
	if stopped, err := p.JobStopped(ctx(t)); err != nil || !stopped {
		t.Fatalf("job-stopped %v %v, want a process seized in its stop to be", stopped, err)
	}
	if err := p.Release(ctx(t)); err != nil {
		t.Fatal(err)
	}
	if st, tr := procfs.ThreadState(pid, pid), proc(t, pid, pid, "TracerPid"); st != "T" || tr != "0" {
		t.Fatalf("state %s, tracer %s after release, want stopped and untraced", st, tr)
	}
	if p, err = Seize(pid); err != nil {
		t.Fatal(err)
	}
	defer p.Kill()
	unix.Kill(pid, unix.SIGCONT)
	io.WriteString(in, "go\n")
	f := event(t, p).Fault
	if f == nil || f.Signal != unix.SIGSEGV || f.TID == pid {
		t.Fatalf("fault %+v, want SIGSEGV in the worker", f)
	}
}

// A hand-off leaves the process stopped and untraced with the fault's
// signal pending in its thread, and nothing else.
func TestHandOff(t *testing.T) {
	bin := victim(t)
	r := start(t, bin, "thread-segv")
	r.proceed(t)
	f := event(t, r.p).Fault
	if f == nil {
		t.Fatal("no fault")
	}
	pid := r.p.PID()
	got, err := r.p.HandOff(ctx(t))
	if err != nil || got == nil || got.TID != f.TID {
		t.Fatalf("hand-off: %+v %v, want the fault %+v", got, err, f)
	}
	tids, _ := threadIDs(pid)
	for _, tid := range tids {
		if st := procfs.ThreadState(pid, tid); st != "T" {
			t.Errorf("thread %d: state %s after hand-off, want T", tid, st)
		}
		if tr := proc(t, pid, tid, "TracerPid"); tr != "0" {
			t.Errorf("thread %d traced by %s after hand-off", tid, tr)
		}
		want := "0000000000000000"
		if tid == f.TID {
			want = "0000000000000400" // SIGSEGV
		}
		if pnd := proc(t, pid, tid, "SigPnd"); pnd != want {
			t.Errorf("thread %d: SigPnd %s, want %s", tid, pnd, want)
		}
	}
	unix.Kill(pid, unix.SIGKILL)
	var ws unix.WaitStatus
	unix.Wait4(pid, &ws, 0, nil)
}
