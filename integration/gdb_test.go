package integration

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sdm-hpc/sdm/backend"
	"github.com/sdm-hpc/sdm/client"
	"github.com/sdm-hpc/sdm/console"
	"github.com/sdm-hpc/sdm/launcher"
	"github.com/sdm-hpc/sdm/rm/local"
	"github.com/sdm-hpc/sdm/testkit/testenv"
	"github.com/sdm-hpc/sdm/wire"
)

// Sixteen ranks of plain under gdb: one merged stop for the fifteen that
// reach compute, the last rank (which goes through special) on its own,
// and print grouping the ranks by value.
func TestPlainUnderGDB(t *testing.T) {
	testenv.RequireTool(t, "gdb")
	bin := testenv.Examples(t)
	out, stderr, code := run(t, "", "debug", "-n", "16", "--timeout", "60s",
		"-e", "break compute", "-e", "break special", "-e", "run", "-e", "wait",
		"-e", "print rank % 2", "-e", "[15] print rank", "-e", "[3-4] next", "-e", "[3-4] print value",
		"-e", "stacks", "-e", "continue", "-e", "wait",
		"--", filepath.Join(bin, "plain"))
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, stderr)
	}
	for _, want := range []string{
		"[0-15] breakpoint 1 at examples/plain/plain.c:15 in compute\n",
		"[0-14] stopped in compute at examples/plain/plain.c:15 (breakpoint 1)\n",
		"[15] stopped in special at examples/plain/plain.c:22 (breakpoint 2)\n",
		"[0,2,4,6,8,10,12,14] rank % 2 = 0\n",
		"[1,3,5,7,9,11,13,15] rank % 2 = 1\n",
		"[15] rank = 15\n",
		"[3-4] stopped in compute at examples/plain/plain.c:16 (end-stepping-range)\n",
		"[3] value = 1\n", "[4] value = 0\n",
		"[0-14] main at examples/plain/plain.c:42 (15 ranks)\n",
		"  [0-2,5-14] compute at examples/plain/plain.c:15 (13 ranks)\n  [3-4] compute at examples/plain/plain.c:16 (2 ranks)\n",
		"[15] main at examples/plain/plain.c:40 (1 rank)\n  [15] special at examples/plain/plain.c:22 (1 rank)\n",
		"[15] hello from rank 15 of 16: 1500\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	if exited := ranksOf(out, " exited with code 0"); !exited.Equal(wire.All(16)) {
		t.Errorf("exits reported for ranks %v, want 0-15", exited)
	}
	// One line per distinct stop: the fifteen ranks' hit is not split.
	if n := strings.Count(out, "stopped in compute at examples/plain/plain.c:15"); n != 1 {
		t.Errorf("the breakpoint hit printed as %d lines, want 1", n)
	}
	if t.Failed() {
		t.Logf("output:\n%s\nstderr:\n%s", out, stderr)
	}
}

// gdbTree is a tree of servers started by mpirun, each debugging its rank
// with gdb, and a session to it.
func gdbTree(t *testing.T, n int, program string, args ...string) *client.Session {
	t.Helper()
	testenv.RequireTool(t, "gdb")
	mpirun := testenv.RequireTool(t, "mpirun.openmpi", "mpirun")
	bin := testenv.Examples(t)
	s := newSession(t, n)
	s.master()
	serverArgs := []string{sdmBin, "--routing_file=" + s.routes, "--key-file=" + s.keyFile, "--debugger=gdb-mi"}
	start(t, testenv.Command(t, mpirun, append([]string{"--allow-run-as-root", "--oversubscribe", "-np", strconv.Itoa(n)}, serverArgs...)...))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cs := s.join(ctx, n)
	t.Cleanup(func() { cs.Quit(context.Background(), 10*time.Second) })
	body := wire.MustEncode(wire.Start{Program: filepath.Join(bin, program), Args: args})
	if groups := command(t, cs.Command, wire.All(n), wire.OpStart, body); !okRanks(groups).Equal(wire.All(n)) {
		t.Fatalf("start %s: %s", program, describe(groups))
	}
	return cs
}

// events collects the session's events until done says it has seen
// enough, or fails the test after 60 s.
func events(t testing.TB, cs *client.Session, done func(client.Event) bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for {
		ev, err := cs.NextEvent(ctx)
		if err != nil {
			t.Fatalf("waiting for events: %v", err)
		}
		if done(ev) {
			return
		}
	}
}

// stoppedAll waits until every rank of want has reported a stop.
func stoppedAll(t testing.TB, cs *client.Session, want wire.RankSet) []wire.State {
	t.Helper()
	var got wire.RankSet
	var states []wire.State
	events(t, cs, func(ev client.Event) bool {
		if ev.Op == wire.EventStopped {
			got = got.Union(ev.Group.Ranks)
			var st wire.State
			wire.Decode(ev.Group.Body, &st)
			states = append(states, st)
		}
		return want.Minus(got).Empty()
	})
	return states
}

// hang under mpirun: after halt, the stack tree has the seven waiting
// ranks in one branch (through MPI_Recv) and the stuck one in another.
func TestHangUnderMpirun(t *testing.T) {
	const n = 8
	cs := gdbTree(t, n, "hang")
	all := wire.All(n)
	command(t, cs.Command, all, wire.OpBreak, wire.MustEncode(wire.Break{Location: "MPI_Recv"}))
	command(t, cs.Command, all, wire.OpBreak, wire.MustEncode(wire.Break{Location: "compute"}))
	command(t, cs.Command, all, wire.OpRun, nil)
	stoppedAll(t, cs, all)
	command(t, cs.Command, all, wire.OpDelete, wire.MustEncode(wire.IDs{IDs: []int{1, 2}}))
	command(t, cs.Command, all, wire.OpCont, nil)
	if groups := command(t, cs.Command, all, wire.OpHalt, nil); !okRanks(groups).Equal(all) {
		t.Fatalf("halt: %s", describe(groups))
	}
	stoppedAll(t, cs, all)
	roots, err := console.BuildStackTree(command(t, cs.Command, all, wire.OpWhere, nil))
	if err != nil {
		t.Fatal(err)
	}
	// Open MPI's MPI_Recv is an alias of PMPI_Recv, the name gdb shows.
	recv, stuck := findFrame(roots, "PMPI_Recv"), findFrame(roots, "compute")
	if recv == nil || recv.Ranks.String() != "0-6" || stuck == nil || stuck.Ranks.String() != "7" {
		t.Fatalf("stack tree: MPI_Recv %v, compute %v\n%s", recv, stuck, console.DOT(roots))
	}
	// deadlock's reading of it: the waits, the rank outside MPI, and that
	// the waits lead to it.
	d := console.Diagnose(roots, wire.RankSet{})
	got := strings.Join(d.Lines, "\n")
	for _, want := range []string{
		"ranks 0-6 wait in MPI_Recv at examples/hang/hang.c:27 (main)",
		"rank 7 is not waiting in MPI: in compute at examples/hang/hang.c:12",
		"diagnosis: rank 7 is outside MPI while ranks 0-6 wait",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("no %q in the diagnosis:\n%s", want, got)
		}
	}
}

func findFrame(nodes []*console.StackNode, fn string) *console.StackNode {
	for _, n := range nodes {
		if n.Frame.Func == fn {
			return n
		}
		if f := findFrame(n.Children, fn); f != nil {
			return f
		}
	}
	return nil
}

// crash under mpirun: the rank that dereferences NULL stops with SIGSEGV
// at its file and line; the others keep running.
func TestCrashUnderMpirun(t *testing.T) {
	const n = 4
	cs := gdbTree(t, n, "crash")
	all := wire.All(n)
	command(t, cs.Command, all, wire.OpRun, nil)
	states := stoppedAll(t, cs, wire.Single(1))
	st := states[len(states)-1]
	if st.Signal != "SIGSEGV" || st.Frame.Func != "fail" || st.Frame.File != "examples/crash/crash.c" || st.Frame.Line != 12 {
		t.Fatalf("crash: %+v", st)
	}
	groups := command(t, cs.Command, all, wire.OpStatus, nil)
	var running wire.RankSet
	for _, g := range groups {
		var s wire.State
		if g.Status == wire.StatusOK && wire.Decode(g.Body, &s) == nil && s.State == wire.StateRunning {
			running = running.Union(g.Ranks)
		}
	}
	if running.String() != "0,2-3" {
		t.Fatalf("status after the crash: %s", describe(groups))
	}
	command(t, cs.Command, all, wire.OpKill, nil)
}

// plainUnderGDB launches n rank servers with gdb, loads examples/plain in
// each (which runs 30 s once run) and returns the session, ended with the
// test, a gdb of it and how many ranks that gdb debugs: rank's own gdb,
// or, when the tests' ranks share gdbs (gdbsFor), one of the session's
// gdbs of two ranks each, whose ranks the test learns from what they
// lose.
func plainUnderGDB(ctx context.Context, t *testing.T, n, rank int) (*launcher.Session, int, int) {
	t.Helper()
	testenv.RequireTool(t, "gdb")
	bin := testenv.Examples(t)
	per := min(backend.RanksPerGDB(), 2)
	s, err := launcher.Launch(ctx, launcher.Options{Size: n, Debugger: "gdb-mi", SDM: sdmBin, RanksPerGDB: per})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.End(10 * time.Second) })
	body := wire.MustEncode(wire.Start{Program: filepath.Join(bin, "plain"), Args: []string{"30"}})
	command(t, s.Command, wire.All(n), wire.OpStart, body)
	if per == 1 {
		return s, testenv.Child(t, s.Job.(*local.Job).Process(rank).Pid, "gdb"), 1
	}
	gdbs := testenv.Procs("gdb", launcher.SessionEnv+"="+s.Dir, false)
	if len(gdbs) != n/per {
		t.Fatalf("%d gdbs for %d ranks, %d a gdb", len(gdbs), n, per)
	}
	return s, gdbs[0].Pid, per
}

// gdb killed under a rank server: that rank (the ranks of that gdb, when
// ranks share gdbs) reports an error within 2 s and the others still
// answer.
func TestGDBKilledUnderServer(t *testing.T) {
	const n = 4
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	s, gdb, per := plainUnderGDB(ctx, t, n, 2)
	start := time.Now()
	syscall.Kill(gdb, syscall.SIGKILL)
	var lost wire.RankSet
	events(t, s.Session, func(ev client.Event) bool {
		if ev.Op == wire.EventError && strings.Contains(string(ev.Group.Body), "killed") {
			lost = lost.Union(ev.Group.Ranks)
		}
		return lost.Count() >= per
	})
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("the error came after %v", d)
	}
	if lost.Count() != per || per == 1 && lost.String() != "2" {
		t.Fatalf("ranks %v lost with a gdb of %d", lost, per)
	}
	groups := command(t, s.Command, wire.All(n), wire.OpStatus, nil)
	if !okRanks(groups).Equal(wire.All(n).Minus(lost)) || !strings.Contains(describe(groups), "error: gdb") {
		t.Fatalf("status: %s", describe(groups))
	}
}

// Input errors at the console are reported on one line each and the
// session goes on.
func TestConsoleInputErrors(t *testing.T) {
	input := "frobnicate\n[9-3] where\n[5] where\n[0-1] where\nprint\nbreak\nframe x\nx\n[0 status\nwhere\n"
	out, stderr, code := run(t, input, "debug", "-n", "2", "--backend", "sim", "--", "ring")
	if code != 2 {
		t.Fatalf("exit %d, want 2 for commands typed wrong: %s", code, stderr)
	}
	for _, want := range []string{
		`unknown command "frobnicate"`, "range ends before it starts", "ranks 5 are not in this job",
		"print needs an expression", "break needs a location", "frame needs a frame level",
		"x needs an address", "no closing ]",
	} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	if n := strings.Count(strings.TrimSpace(stderr), "\n") + 1; n != 9 {
		t.Errorf("%d lines of errors for 8 bad commands and the summary:\n%s", n, stderr)
	}
	// The good commands after the bad ones ran.
	if strings.Count(out, "MPI_Send () at send.c:110") != 2 {
		t.Errorf("where ran %d times after the errors, want 2:\n%s", strings.Count(out, "MPI_Send () at send.c:110"), out)
	}
}

// A rank's process killed from outside while stopped at a breakpoint
// (here by gdb's Python, behind gdb's back) is reported at once, status
// says so, and continue answers with the death instead of running.
func TestRankKilledAtBreakpoint(t *testing.T) {
	testenv.RequireTool(t, "gdb")
	bin := testenv.Examples(t)
	out, stderr, code := run(t, "", "debug", "-n", "3", "-e", "break compute", "-e", "run", "-e", "[0-1] wait",
		"-e", "[1] gdb python import os; os.kill(gdb.selected_inferior().pid, 9)",
		"-e", "[1] status", "-e", "[1] continue", "-e", "[1] status", "-e", "kill", "--", filepath.Join(bin, "plain"), "30")
	if code != 1 {
		t.Errorf("exit %d, want 1 for the rank that answered with an error: %s", code, stderr)
	}
	// The event, two statuses, and the answers of continue and kill,
	// which say what became of the process.
	if n := strings.Count(out, "[1] killed by SIGKILL\n"); n != 5 {
		t.Errorf("%d lines say rank 1 was killed (the event, two statuses, continue and kill), want 5:\n%s", n, out)
	}
	if strings.Contains(out, "[1] running") {
		t.Errorf("a dead rank reported running:\n%s", out)
	}
}

// A line longer than a command may be is one command typed wrong, from
// -e, a --batch file or piped input alike: one error naming the script
// and the line, and the next command still runs.
func TestConsoleLongLine(t *testing.T) {
	long := strings.Repeat("[0] print x", 7000)[:70000]
	script := filepath.Join(t.TempDir(), "cmds")
	os.WriteFile(script, []byte("[0] where\n"+long+"\n[1] where\n"), 0o600)
	for _, c := range []struct {
		name, stdin string
		args        []string
	}{
		{"-e", "", []string{"-e", "[0] where", "-e", long, "-e", "[1] where"}},
		{script, "", []string{"--batch", script}},
		{"stdin", "[0] where\n" + long + "\n[1] where\n", nil},
	} {
		args := append([]string{"debug", "-n", "2", "--backend", "sim"}, c.args...)
		out, stderr, code := run(t, c.stdin, append(args, "--", "ring")...)
		if code != 2 {
			t.Errorf("%s: exit %d, want 2 for a command typed wrong: %s", c.name, code, stderr)
		}
		want := "sdm: " + c.name + ":2: a line of 70000 bytes is longer than the 64 KiB a command may be\n"
		if !strings.Contains(stderr, want) || strings.Count(stderr, "longer than") != 1 {
			t.Errorf("%s: stderr lacks %q once:\n%.2000s", c.name, want, stderr)
		}
		if !strings.Contains(out, "[0] #0  MPI_Send () at send.c:110") || !strings.Contains(out, "[1] #0  MPI_Sendrecv () at sendrecv.c:87") {
			t.Errorf("%s: the commands around the long line did not both run:\n%s", c.name, out)
		}
	}
}

// Every console command, through the tree to two gdbs and back.
func TestEveryConsoleCommand(t *testing.T) {
	testenv.RequireTool(t, "gdb")
	bin := testenv.Examples(t)
	script := filepath.Join(t.TempDir(), "all")
	os.WriteFile(script, []byte(`break compute
tbreak special
watch counter
breakpoints
disable 3
enable 3
condition 1 rank >= 0
ignore 1 0
run
wait
status
bt
depth
frame 1
frame 0
print rank
ptype rank
locals
args
globals
threads
thread 1
x &rank 4
poke &rank 05000000
print rank
next
step
finish
signals
handle SIGUSR1 nostop noprint
gdb info line compute
gdb -stack-info-depth
delete 3
halt
continue
wait
help break
focus 0
status
quit
`), 0o644)
	flags, kind := watchpoints()
	out, stderr, code := run(t, "", append(append([]string{"debug", "-n", "2"}, flags...), "--batch", script, "--", filepath.Join(bin, "plain"))...)
	if code != 0 {
		t.Fatalf("exit %d: %s\n%s", code, stderr, out)
	}
	for _, want := range []string{
		"[0-1] breakpoint 1 at examples/plain/plain.c:15 in compute\n",
		"[0-1] temporary breakpoint 2 at examples/plain/plain.c:22 in special\n",
		"[0-1] write watchpoint 3 on counter\n",
		"      " + kind + " 3 on counter\n",
		"[0] stopped in compute at examples/plain/plain.c:15 (breakpoint 1)\n",
		"[1] stopped in special at examples/plain/plain.c:22 (breakpoint 2)\n",
		"[0] #0  compute (rank=0, size=2) at examples/plain/plain.c:15\n    #1  main (argc=1, argv=0x",
		") at examples/plain/plain.c:42\n",
		"[0-1] 2 frames\n",
		"[1] #1  main at examples/plain/plain.c:40\n    40\t        result = special(rank);\n", // frame 1
		"[1] rank = 1\n",
		"[0-1] type = int\n",
		"[0] rank = 0\n[1] rank = 1\n[0] size = 2\n",
		"[0-1] counter = 0\n",
		"[0] * 1 plain stopped in compute at examples/plain/plain.c:15\n",
		"[1] 0x", ": 01000000\n",
		"[0-1] rank = 5\n",
		"[0] stopped in compute at examples/plain/plain.c:16 (end-stepping-range)\n",
		"[0] stopped in compute at examples/plain/plain.c:17 (watchpoint 3)\n    Old value = 0\n    New value = 1\n",
		"[1] stopped in main at examples/plain/plain.c:40 (function-finished)\n    Value returned is 500\n",
		"SIGSEGV       Yes\tYes\tYes\t\tSegmentation fault\n",
		"      SIGUSR1       No\tNo\tYes\t\tUser defined signal 1\n",
		`[0-1] Line 14 of "examples/plain/plain.c"`,
		"[0-1] done,depth=\"1\"\n",
		"[0] hello from rank 0 of 2: 12\n",
		"[SET] break LOCATION [if COND]\n",
		"focus [0]\n[0] exited with code 0\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	if exited := ranksOf(out, " exited with code 0"); !exited.Equal(wire.All(2)) {
		t.Errorf("exits reported for ranks %v, want 0-1", exited)
	}
	if t.Failed() {
		t.Logf("output:\n%s", out)
	}
}

// ranksOf is the union of the rank sets of the lines of out that end in
// what: "[0-3,7] what".
func ranksOf(out, what string) wire.RankSet {
	var all wire.RankSet
	for _, line := range strings.Split(out, "\n") {
		if !strings.HasSuffix(line, what) || !strings.HasPrefix(line, "[") {
			continue
		}
		if r, err := wire.ParseRankSet(line[1:strings.IndexByte(line, ']')]); err == nil {
			all = all.Union(r)
		}
	}
	return all
}

// where and stacks of ranks that run under their gdb (--gdb eager) look
// at them in passing, as the lazy servers' samples do: the stacks, and
// the ranks still running, with nothing said of a stop.
func TestWhereOfRunningRanksUnderGDB(t *testing.T) {
	testenv.RequireTool(t, "gdb")
	bin := testenv.Examples(t)
	const n = 3
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := launcher.Launch(ctx, launcher.Options{Size: n, Debugger: backend.GDB, GDB: backend.Eager, SDM: sdmBin})
	if err != nil {
		t.Fatal(err)
	}
	defer s.End(30 * time.Second)
	all := wire.All(n)
	command(t, s.Command, all, wire.OpStart, wire.MustEncode(wire.Start{Program: filepath.Join(bin, "plain"), Args: []string{"30"}}))
	command(t, s.Command, all, wire.OpRun, nil)
	wrote(ctx, t, s, all, "hello")
	inRest := func(frames []wire.Frame) bool {
		return slices.ContainsFunc(frames, func(f wire.Frame) bool { return f.Func == "rest" })
	}
	g := command(t, s.Command, all, wire.OpWhere, nil)
	for _, st := range decoded[wire.Stack](t, g) {
		if !okRanks(g).Equal(all) || !inRest(st.Frames) {
			t.Fatalf("where of running ranks: %s %+v", describe(g), st)
		}
	}
	g = command(t, s.Command, all, wire.OpBacktrace, wire.MustEncode(wire.Backtrace{Full: true}))
	for _, tr := range decoded[wire.Trace](t, g) {
		var frames []wire.Frame
		for _, l := range tr.Levels {
			frames = append(frames, l.Frame)
		}
		if !okRanks(g).Equal(all) || !inRest(frames) {
			t.Fatalf("bt full of running ranks: %s %+v", describe(g), tr)
		}
	}
	for _, st := range decoded[wire.State](t, command(t, s.Command, all, wire.OpStatus, nil)) {
		if st.State != wire.StateRunning {
			t.Fatalf("status after a look: %+v, want running", st)
		}
	}
	// Nothing was said of a stop, nor of running again (beyond run's
	// own news): what came in is read without waiting.
	drained, done := context.WithCancel(ctx)
	done()
	runs := map[int]int{}
	for {
		ev, err := s.NextEvent(drained)
		if err != nil {
			break
		}
		if ev.Op == wire.EventStopped {
			t.Fatalf("a look told a stop of %v", ev.Group.Ranks)
		}
		if ev.Op == wire.EventRunning {
			ev.Group.Ranks.Each(func(r int) bool {
				if runs[r]++; runs[r] > 1 {
					t.Errorf("rank %d told running twice: run's, and a look's", r)
				}
				return true
			})
		}
	}
}
