package stackwalk

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sdm-hpc/sdm/testkit/testenv"
)

// build compiles testdata/src with compiler and flags into a temporary
// directory and returns the program's path.
func build(t testing.TB, compiler, src string, flags ...string) string {
	t.Helper()
	testenv.RequireTool(t, compiler)
	out := filepath.Join(t.TempDir(), strings.TrimSuffix(src, filepath.Ext(src)))
	args := append([]string{"-o", out, filepath.Join("testdata", src)}, flags...)
	if b, err := testenv.Command(t, compiler, args...).CombinedOutput(); err != nil {
		t.Fatalf("%s %v: %v\n%s", compiler, args, err, b)
	}
	return out
}

// started is a test program running in the background.
type started struct {
	cmd *exec.Cmd
	out *bufio.Reader
}

// startProgram runs a program and waits until it prints a line starting
// with ready.
func startProgram(t testing.TB, ready string, name string, args ...string) *started {
	t.Helper()
	cmd := testenv.Command(t, name, args...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	p := &started{cmd: cmd, out: bufio.NewReader(stdout)}
	if ready != "" {
		p.waitLine(t, ready)
	}
	return p
}

// waitLine reads the program's output until a line starts with prefix,
// for at most a minute, and returns that line.
func (p *started) waitLine(t testing.TB, prefix string) string {
	t.Helper()
	got := make(chan string, 1)
	go func() {
		for {
			line, err := p.out.ReadString('\n')
			if strings.HasPrefix(line, prefix) {
				got <- strings.TrimSpace(line)
				return
			}
			if err != nil {
				got <- ""
				return
			}
		}
	}()
	select {
	case line := <-got:
		if line == "" {
			t.Fatalf("%v ended its output without a line %q", p.cmd.Args, prefix)
		}
		return line
	case <-time.After(time.Minute):
		t.Fatalf("%v: no line %q within a minute", p.cmd.Args, prefix)
	}
	return ""
}

// waitBlocked waits until every thread of pid sleeps in the same system
// call on two looks in a row: the stacks of threads blocked for good, which
// two tools sampling one after the other see alike.
func waitBlocked(t testing.TB, pid int) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	prev := ""
	for {
		cur := syscalls(pid)
		if cur != "" && cur == prev {
			return
		}
		prev = cur
		if time.Now().After(deadline) {
			t.Fatalf("process %d: threads not all blocked within a minute: %s", pid, cur)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// syscalls is every thread's /proc/PID/task/TID/syscall, or "" while one
// of them runs.
func syscalls(pid int) string {
	tids, err := threadIDs(pid)
	if err != nil {
		return ""
	}
	var b strings.Builder
	for _, tid := range tids {
		s, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/syscall", pid, tid))
		if err != nil || strings.HasPrefix(string(s), "running") {
			return ""
		}
		fmt.Fprintf(&b, "%d %s", tid, s)
	}
	return b.String()
}

var euFrame = regexp.MustCompile(`^#\d+\s+0x([0-9a-f]+)`)

// euStack runs eu-stack -p and returns each thread's pcs.
func euStack(t testing.TB, pid int) map[int][]uint64 {
	t.Helper()
	out, err := testenv.Command(t, testenv.RequireTool(t, "eu-stack"), "-p", strconv.Itoa(pid)).Output()
	if err != nil && len(out) == 0 {
		t.Fatalf("eu-stack -p %d: %v", pid, err)
	}
	stacks := map[int][]uint64{}
	tid := 0
	for _, line := range strings.Split(string(out), "\n") {
		if v, ok := strings.CutPrefix(line, "TID "); ok {
			tid, _ = strconv.Atoi(strings.TrimSuffix(v, ":"))
			stacks[tid] = []uint64{}
		} else if m := euFrame.FindStringSubmatch(line); m != nil {
			pc, _ := strconv.ParseUint(m[1], 16, 64)
			stacks[tid] = append(stacks[tid], pc)
		}
	}
	return stacks
}

// pcs returns each thread's pcs, one per frame that is not an inlined call
// and without the closing "??" of a walk that stopped.
func pcs(s Snapshot) map[int][]uint64 {
	stacks := map[int][]uint64{}
	for _, th := range s.Threads {
		list := []uint64{}
		for _, f := range th.Frames {
			if !f.Inlined && f.PC != 0 {
				list = append(list, f.PC)
			}
		}
		stacks[th.TID] = list
	}
	return stacks
}

// agreeWithEuStack samples pid with the sampler and with eu-stack and
// compares their pcs thread by thread. A thread that woke between the two
// (a progress thread's timeout) can make them differ once: a second pair
// of samples decides.
func agreeWithEuStack(t *testing.T, s *Sampler, pid int) Snapshot {
	t.Helper()
	var snap Snapshot
	var ours, theirs map[int][]uint64
	for try := 0; try < 3; try++ {
		var err error
		snap, err = s.Sample(context.Background(), pid)
		if err != nil {
			t.Fatalf("sample %d: %v", pid, err)
		}
		ours, theirs = pcs(snap), euStack(t, pid)
		if reflect.DeepEqual(ours, theirs) {
			return snap
		}
	}
	t.Errorf("process %d: the sampler's stacks differ from eu-stack's\nsampler:\n%s\neu-stack:\n%s", pid, dump(ours), dump(theirs))
	t.Logf("sampler's frames:\n%s", format(snap))
	return snap
}

func dump(m map[int][]uint64) string {
	var b strings.Builder
	for tid, list := range m {
		fmt.Fprintf(&b, "TID %d:", tid)
		for _, pc := range list {
			fmt.Fprintf(&b, " %#x", pc)
		}
		b.WriteString("\n")
	}
	return b.String()
}

// format prints a snapshot as eu-stack -i -s would, for failure messages.
func format(s Snapshot) string {
	var b strings.Builder
	for _, th := range s.Threads {
		fmt.Fprintf(&b, "TID %d (%s):\n", th.TID, th.Name)
		for i, f := range th.Frames {
			inl := ""
			if f.Inlined {
				inl = " [inlined]"
			}
			fmt.Fprintf(&b, "#%-2d %#016x %s%s %s:%d %s\n", i, f.PC, f.Function, inl, f.File, f.Line, filepath.Base(f.Module))
		}
	}
	return b.String()
}

// functions is a thread's function names, innermost first.
// fromPause is th from its frame in pause on: glibc 2.41 (Debian 13)
// enters the system call through __syscall_cancel and
// __internal_syscall_cancel, which earlier releases did not.
func fromPause(th Thread) Thread {
	for i, f := range th.Frames {
		if f.Function == "pause" {
			th.Frames = th.Frames[i:]
			break
		}
	}
	return th
}

func functions(th Thread) []string {
	var names []string
	for _, f := range th.Frames {
		names = append(names, f.Function)
	}
	return names
}
