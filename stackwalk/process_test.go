package stackwalk

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sdm-hpc/sdm/internal/procfs"
	"github.com/sdm-hpc/sdm/testkit/testenv"
)

// A process sampled 1000 times keeps running, computes right, and gets
// every SIGUSR1 sent to it meanwhile.
func TestSampledProcessLosesNoSignal(t *testing.T) {
	bin := build(t, "gcc", "signals.c", "-O2", "-pthread")
	p := startProgram(t, "", bin)
	if b, err := p.out.ReadByte(); err != nil || b != 'R' {
		t.Fatalf("signals: %q, %v; want R", b, err)
	}
	pid := p.cmd.Process.Pid
	s := NewSampler()
	defer s.Close()
	const samples = 1000
	sampled := make(chan error, 1)
	go func() {
		for i := 0; i < samples; i++ {
			snap, err := s.Sample(context.Background(), pid)
			if err == nil && len(snap.Threads) != 2 {
				err = fmt.Errorf("sample %d: %d threads, want 2", i, len(snap.Threads))
			}
			if err != nil {
				sampled <- err
				return
			}
		}
		sampled <- nil
	}()
	// One reader of the program's output: an A per signal, then a line
	// with the count.
	acks := make(chan error)
	final := make(chan string, 1)
	go func() {
		for {
			b, err := p.out.ReadByte()
			if err == nil && b == '\n' {
				line, _ := p.out.ReadString('\n')
				final <- strings.TrimSpace(line)
				return
			}
			if err == nil && b != 'A' {
				err = fmt.Errorf("read %q, want A", b)
			}
			acks <- err
			if err != nil {
				return
			}
		}
	}()
	sent := 0
	for done := false; !done; {
		if err := syscall.Kill(pid, syscall.SIGUSR1); err != nil {
			t.Fatal(err)
		}
		sent++
		select {
		case err := <-acks:
			if err != nil {
				t.Fatalf("after %d signals: %v", sent, err)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("signal %d not handled within 30s: lost while the process was sampled", sent)
		}
		select {
		case err := <-sampled:
			if err != nil {
				t.Fatal(err)
			}
			done = true
		default:
		}
	}
	syscall.Kill(pid, syscall.SIGUSR2)
	var line string
	select {
	case line = <-final:
	case <-time.After(time.Minute):
		t.Fatal("no count from the program within a minute of its SIGUSR2")
	}
	if want := fmt.Sprintf("count %d corrupt 0", sent); line != want {
		t.Errorf("program says %q, want %q", line, want)
	}
	if err := p.cmd.Wait(); err != nil {
		t.Errorf("program: %v, want a clean exit", err)
	}
	t.Logf("%d samples, %d signals", samples, sent)
}

func TestExitedProcess(t *testing.T) {
	cmd := testenv.Command(t, testenv.RequireTool(t, "true"))
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	_, err := NewSampler().Sample(context.Background(), cmd.Process.Pid)
	if !errors.Is(err, ErrGone) || !strings.Contains(err.Error(), strconv.Itoa(cmd.Process.Pid)) {
		t.Errorf("sample of an exited process: %v, want ErrGone naming the pid", err)
	}
}

// A process whose threads come and go, sampled until it exits: every
// sample succeeds or says the process is gone.
func TestProcessExitsWhileSampled(t *testing.T) {
	bin := build(t, "gcc", "churn.c", "-O2", "-pthread")
	p := startProgram(t, "ready", bin, "3000")
	s := NewSampler()
	defer s.Close()
	ok := 0
	deadline := time.Now().Add(2 * time.Minute)
	for {
		_, err := s.Sample(context.Background(), p.cmd.Process.Pid)
		if err == nil {
			ok++
			continue
		}
		if !errors.Is(err, ErrGone) {
			t.Fatalf("after %d samples: %v, want ErrGone", ok, err)
		}
		break
	}
	if time.Now().After(deadline) {
		t.Fatal("sampled for two minutes and the process still runs")
	}
	if ok == 0 {
		t.Error("no sample succeeded before the process exited")
	}
	t.Logf("%d samples before the exit", ok)
}

// A sampler without the right to trace: run as user nobody against a
// process of root's (root itself may trace anything).
func TestPermissionRefused(t *testing.T) {
	if pid := os.Getenv("STACKWALK_SAMPLE_PID"); pid != "" {
		n, _ := strconv.Atoi(pid)
		_, err := NewSampler().Sample(context.Background(), n)
		var pe *PermissionError
		fmt.Printf("permission=%v error=%v\n", errors.As(err, &pe), err)
		return
	}
	target := testenv.Command(t, testenv.RequireTool(t, "sleep"), "600")
	if err := target.Start(); err != nil {
		t.Fatal(err)
	}
	if os.Geteuid() != 0 {
		_, err := NewSampler().Sample(context.Background(), 1)
		var pe *PermissionError
		if !errors.As(err, &pe) {
			t.Fatalf("sample of process 1: %v, want a PermissionError", err)
		}
		return
	}
	// The test binary again, as nobody, from a directory nobody can read.
	exe := testenv.SelfCopy(t)
	cmd := testenv.Command(t, exe, "-test.run=^TestPermissionRefused$")
	cmd.Env = append(os.Environ(), "STACKWALK_SAMPLE_PID="+strconv.Itoa(target.Process.Pid))
	cmd.SysProcAttr.Credential = &syscall.Credential{Uid: 65534, Gid: 65534}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v as nobody: %v\n%s", cmd.Args, err, out)
	}
	if !strings.Contains(string(out), "permission=true") || !strings.Contains(string(out), "belongs to user 0") {
		t.Errorf("sampled as nobody:\n%s\nwant a PermissionError saying the process belongs to user 0", out)
	}
}

func TestKernelThread(t *testing.T) {
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		if pid, err := strconv.Atoi(e.Name()); err == nil && kernelThread(pid) {
			_, err := NewSampler().Sample(context.Background(), pid)
			if err == nil || !strings.Contains(err.Error(), "kernel thread") {
				t.Errorf("sample of kernel thread %d: %v, want a kernel thread error", pid, err)
			}
			return
		}
	}
	t.Skip("no kernel thread in this pid namespace")
}

// A sample cut short leaves the process running and untraced.
func TestCancelledSample(t *testing.T) {
	bin := build(t, "gcc", "threads.c", "-O2", "-pthread")
	p := startProgram(t, "ready", bin)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := NewSampler().Sample(ctx, p.cmd.Process.Pid)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled sample: %v, want context.Canceled", err)
	}
	if tracer := procfs.StatusField(p.cmd.Process.Pid, "TracerPid"); tracer != "0" {
		t.Errorf("TracerPid %s after a cancelled sample, want 0", tracer)
	}
	if _, err := NewSampler().Sample(context.Background(), p.cmd.Process.Pid); err != nil {
		t.Errorf("sample after a cancelled one: %v", err)
	}
}

// A process with a tracer already (a rank under its gdb) is refused, the
// tracer named.
func TestTracedProcess(t *testing.T) {
	bin := build(t, "gcc", "threads.c", "-O2", "-pthread")
	p := startProgram(t, "ready", bin)
	pid := p.cmd.Process.Pid
	seized, release := make(chan error), make(chan struct{})
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		err := unix.PtraceSeize(pid)
		seized <- err
		<-release
		if err == nil {
			unix.PtraceDetach(pid)
		}
		close(seized)
	}()
	if err := <-seized; err != nil {
		t.Fatal(err)
	}
	_, err := NewSampler().Sample(context.Background(), pid)
	close(release)
	<-seized
	var pe *PermissionError
	if !errors.As(err, &pe) || !strings.Contains(err.Error(), "traced by process "+strconv.Itoa(os.Getpid())) {
		t.Errorf("sample of a traced process: %v, want a PermissionError naming its tracer %d", err, os.Getpid())
	}
}

// A refusal under Yama names the setting and what would lift it. Kernels
// without Yama (the test machine's) cannot refuse for it, so the setting
// is read from a file of the test's.
func TestRefusalNamesYama(t *testing.T) {
	target := testenv.Command(t, testenv.RequireTool(t, "sleep"), "600")
	if err := target.Start(); err != nil {
		t.Fatal(err)
	}
	scope := filepath.Join(t.TempDir(), "ptrace_scope")
	saved := yamaScope
	yamaScope = scope
	defer func() { yamaScope = saved }()
	for _, c := range []struct {
		setting string
		want    string
	}{
		{"1\n", "kernel.yama.ptrace_scope is 1: run as root, or as the process's user with ptrace_scope 0"},
		{"3\n", "kernel.yama.ptrace_scope is 3"},
		{"0\n", "ptrace refused"},
	} {
		if err := os.WriteFile(scope, []byte(c.setting), 0o644); err != nil {
			t.Fatal(err)
		}
		err := seizeError(target.Process.Pid, unix.EPERM)
		var pe *PermissionError
		if !errors.As(err, &pe) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("refusal with ptrace_scope %q: %v, want a PermissionError saying %q", strings.TrimSpace(c.setting), err, c.want)
		}
	}
}
