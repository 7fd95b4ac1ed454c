package stackwalk

import (
	"context"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sdm-hpc/sdm/internal/procfs"
	"github.com/sdm-hpc/sdm/testkit/testenv"
)

func TestAgreesWithEuStackC(t *testing.T) {
	s := NewSampler()
	defer s.Close()
	for _, opt := range []string{"-O0", "-O2"} {
		t.Run(opt, func(t *testing.T) {
			bin := build(t, "gcc", "threads.c", "-g", opt, "-pthread")
			p := startProgram(t, "ready", bin)
			waitBlocked(t, p.cmd.Process.Pid)
			snap := agreeWithEuStack(t, s, p.cmd.Process.Pid)
			if len(snap.Threads) != 3 {
				t.Fatalf("%d threads, want 3:\n%s", len(snap.Threads), format(snap))
			}
			main := snap.Threads[0]
			var leafs int
			for _, f := range main.Frames {
				if f.Function == "leaf" {
					leafs++
					if f.File != "testdata/threads.c" || f.Line == 0 {
						t.Errorf("leaf at %s:%d, want testdata/threads.c, as compiled", f.File, f.Line)
					}
				}
			}
			if leafs != 4 || !strings.Contains(strings.Join(functions(main), " "), "middle main") {
				t.Errorf("main thread: %v, want leaf four times, then middle and main", functions(main))
			}
		})
	}
}

func TestAgreesWithEuStackCxx(t *testing.T) {
	s := NewSampler()
	defer s.Close()
	bin := build(t, "g++", "cxx.cc", "-g", "-O2", "-pthread")
	p := startProgram(t, "ready", bin)
	waitBlocked(t, p.cmd.Process.Pid)
	snap := agreeWithEuStack(t, s, p.cmd.Process.Pid)
	all := format(snap)
	if len(snap.Threads) != 2 || !strings.Contains(all, "solver::Grid<double>::relax(int)") {
		t.Errorf("want two threads in solver::Grid<double>::relax(int):\n%s", all)
	}
}

func TestAgreesWithEuStackSignalHandler(t *testing.T) {
	s := NewSampler()
	defer s.Close()
	bin := build(t, "gcc", "handler.c", "-g", "-O2", "-pthread")
	p := startProgram(t, "ready", bin)
	waitBlocked(t, p.cmd.Process.Pid)
	snap := agreeWithEuStack(t, s, p.cmd.Process.Pid)
	found := false
	for _, th := range snap.Threads {
		names := " " + strings.Join(functions(th), " ") + " "
		if strings.Contains(names, " on_usr2 __restore_rt ") {
			found = true
			if !strings.Contains(names, " interrupted worker start_thread ") {
				t.Errorf("the handler's thread does not walk on to the interrupted code: %s", names)
			}
		}
	}
	if !found {
		t.Errorf("no thread in on_usr2 called from __restore_rt:\n%s", format(snap))
	}
}

func TestAgreesWithEuStackStripped(t *testing.T) {
	s := NewSampler()
	defer s.Close()
	bin := build(t, "gcc", "threads.c", "-g", "-O2", "-pthread")
	if b, err := testenv.Command(t, testenv.RequireTool(t, "strip"), bin).CombinedOutput(); err != nil {
		t.Fatalf("strip: %v\n%s", err, b)
	}
	p := startProgram(t, "ready", bin)
	waitBlocked(t, p.cmd.Process.Pid)
	snap := agreeWithEuStack(t, s, p.cmd.Process.Pid)
	names := strings.Join(functions(fromPause(snap.Threads[0])), " ")
	if !strings.HasPrefix(names, "pause ?? ") || !strings.Contains(names, "__libc_start_main") {
		t.Errorf("stripped program's main thread: %s, want pause, nameless frames, libc's start", names)
	}
}

// A process spinning in the vdso, stopped by SIGSTOP: sampled where it
// stands, and left stopped.
func TestAgreesWithEuStackVdsoStoppedStaysStopped(t *testing.T) {
	s := NewSampler()
	defer s.Close()
	bin := build(t, "gcc", "vdso.c", "-g", "-O2")
	p := startProgram(t, "ready", bin)
	pid := p.cmd.Process.Pid
	var snap Snapshot
	for try := 0; ; try++ {
		if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
		testenv.WaitStopped(t, pid)
		var err error
		if snap, err = s.Sample(context.Background(), pid); err != nil {
			t.Fatal(err)
		}
		if snap.Threads[0].Frames[0].Module == "[vdso]" {
			break
		}
		if try == 1000 {
			t.Fatalf("never stopped in the vdso in 1000 tries; last:\n%s", format(snap))
		}
		syscall.Kill(pid, syscall.SIGCONT)
	}
	snap = agreeWithEuStack(t, s, pid)
	if names := strings.Join(functions(snap.Threads[0]), " "); !strings.Contains(names, "main") {
		t.Errorf("from the vdso: %s, want a walk on to main", names)
	}
	// Stopped, it cannot move: every sample finds it at the same pc.
	pc := snap.Threads[0].Frames[0].PC
	for i := 0; i < 50; i++ {
		again, err := s.Sample(context.Background(), pid)
		if err != nil {
			t.Fatal(err)
		}
		if got := again.Threads[0].Frames[0].PC; got != pc {
			t.Fatalf("sample %d: pc %#x, was %#x: the stopped process ran", i, got, pc)
		}
	}
	// Let go, a stopped process is woken for a moment to stop again (the
	// kernel puts a detached tracee back into its group stop), without
	// running a user instruction: it must be stopped again at once.
	deadline := time.Now().Add(5 * time.Second)
	for st := procfs.StatusField(pid, "State"); !strings.HasPrefix(st, "T"); st = procfs.StatusField(pid, "State") {
		if time.Now().After(deadline) {
			t.Fatalf("state 5 s after sampling: %q, want T (stopped)", st)
		}
		time.Sleep(time.Millisecond) // polling /proc: nothing tells another process of a stop
	}
	syscall.Kill(pid, syscall.SIGCONT)
}

// Without .eh_frame, gcc -g puts the call frame information in
// .debug_frame.
func TestAgreesWithEuStackDebugFrameOnly(t *testing.T) {
	s := NewSampler()
	defer s.Close()
	bin := build(t, "gcc", "nocfi.c", "-g", "-O2", "-fno-asynchronous-unwind-tables", "-fno-unwind-tables")
	p := startProgram(t, "ready", bin)
	waitBlocked(t, p.cmd.Process.Pid)
	snap := agreeWithEuStack(t, s, p.cmd.Process.Pid)
	if names := strings.Join(functions(fromPause(snap.Threads[0])), " "); !strings.HasPrefix(names, "pause no_cfi main __libc_start_call_main") {
		t.Errorf("stack %q, want pause no_cfi main __libc_start_call_main…", names)
	}
}

// noCFI builds nocfi.c without unwind tables and removes the .debug_frame
// that -g would put in their place.
func noCFI(t *testing.T, flags ...string) string {
	bin := build(t, "gcc", "nocfi.c", append(flags, "-g", "-fno-asynchronous-unwind-tables", "-fno-unwind-tables")...)
	if b, err := testenv.Command(t, testenv.RequireTool(t, "objcopy"), "--remove-section=.debug_frame", bin).CombinedOutput(); err != nil {
		t.Fatalf("objcopy: %v\n%s", err, b)
	}
	return bin
}

func TestNoCFIEndsWithUnknown(t *testing.T) {
	s := NewSampler()
	defer s.Close()
	bin := noCFI(t, "-O2")
	p := startProgram(t, "ready", bin)
	waitBlocked(t, p.cmd.Process.Pid)
	snap, err := s.Sample(context.Background(), p.cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	fr := snap.Threads[0].Frames
	if names := strings.Join(functions(fromPause(snap.Threads[0])), " "); names != "pause no_cfi ??" || fr[len(fr)-1].PC != 0 {
		t.Errorf("stack %q (last pc %#x), want \"pause no_cfi ??\" ending with pc 0:\n%s", names, fr[len(fr)-1].PC, format(snap))
	}
}

// Without CFI but with a frame pointer prologue, the walk goes on through
// the frame pointer chain.
func TestNoCFIFramePointer(t *testing.T) {
	s := NewSampler()
	defer s.Close()
	bin := noCFI(t, "-O0", "-DKEEP_FP", "-fno-omit-frame-pointer")
	p := startProgram(t, "ready", bin)
	waitBlocked(t, p.cmd.Process.Pid)
	snap, err := s.Sample(context.Background(), p.cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	if names := strings.Join(functions(fromPause(snap.Threads[0])), " "); !strings.HasPrefix(names, "pause no_cfi main __libc_start_call_main") {
		t.Errorf("stack %q, want pause no_cfi main __libc_start_call_main…", names)
	}
}

func TestInlinedFrames(t *testing.T) {
	s := NewSampler()
	defer s.Close()
	bin := build(t, "gcc", "inline.c", "-g", "-O2")
	p := startProgram(t, "ready", bin)
	waitBlocked(t, p.cmd.Process.Pid)
	snap := agreeWithEuStack(t, s, p.cmd.Process.Pid)
	fr := fromPause(snap.Threads[0]).Frames
	if len(fr) < 5 {
		t.Fatalf("%d frames:\n%s", len(fr), format(snap))
	}
	type want struct {
		function string
		line     int
		inlined  bool
	}
	for i, w := range []want{{"wait_here", 7, true}, {"settle", 11, true}, {"outer", 15, false}} {
		f := fr[i+1]
		if f.Function != w.function || f.Line != w.line || f.Inlined != w.inlined || f.PC != fr[1].PC {
			t.Errorf("frame %d: %s line %d inlined %v pc %#x; want %s line %d inlined %v pc %#x\n%s",
				i+1, f.Function, f.Line, f.Inlined, f.PC, w.function, w.line, w.inlined, fr[1].PC, format(snap))
		}
	}
}
