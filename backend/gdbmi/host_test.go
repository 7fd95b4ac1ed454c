package gdbmi_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sdm-hpc/sdm/backend"
	"github.com/sdm-hpc/sdm/backend/gdbmi"
	"github.com/sdm-hpc/sdm/testkit/testenv"
	"github.com/sdm-hpc/sdm/wire"
)

// sharing returns n ranks of size n whose backends share gdbs of per
// ranks each, each rank with program loaded.
func sharing(t *testing.T, n, per int, program string, args ...string) []*rank {
	t.Helper()
	testenv.RequireTool(t, "gdb")
	pool := &gdbmi.Pool{PerGDB: per, Start: func(context.Context) (*gdbmi.GDB, error) { return gdbmi.Start("gdb") }}
	ranks := make([]*rank, n)
	for i := range ranks {
		r := &rank{t: t, b: gdbmi.NewShared(backend.Config{Rank: i, Size: n}, pool, gdbmi.Share{}), shared: true}
		t.Cleanup(func() { r.b.Close() })
		r.start(program, args...)
		ranks[i] = r
	}
	return ranks
}

// gdbs counts this process's gdb children.
func gdbs(t *testing.T) int {
	t.Helper()
	return len(testenv.Procs("gdb", "", true))
}

// parent is the parent of process pid.
func parent(t *testing.T, pid int) int {
	t.Helper()
	fields := strings.Fields(string(must1(os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)))))
	ppid, err := strconv.Atoi(fields[3])
	if err != nil {
		t.Fatalf("stat of %d: %v", pid, fields)
	}
	return ppid
}

// runTo runs ranks to a breakpoint at function fn, which each of them
// passes.
func runTo(t *testing.T, ranks []*rank, fn string) {
	t.Helper()
	for _, r := range ranks {
		r.must(wire.OpBreak, wire.Break{Location: fn}, nil)
		r.must(wire.OpRun, nil, nil)
	}
	for i, r := range ranks {
		if st := r.event(wire.EventStopped); st.Frame.Func != fn {
			t.Fatalf("rank %d: %+v", i, st)
		}
	}
}

func must1[T any](v T, _ error) T { return v }

// Four ranks in one gdb, a breakpoint that three pass: each rank stops
// or ends on its own, with its own numbers, values and output; one rank
// steps while the others run to their ends.
func TestSharedGDBBreakpointSomeRanksHit(t *testing.T) {
	bin := testenv.Examples(t)
	ranks := sharing(t, 4, 4, filepath.Join(bin, "plain"))
	for _, r := range ranks {
		var bp wire.Breakpoint
		r.must(wire.OpBreak, wire.Break{Location: "compute"}, &bp)
		if bp.Number != 1 || bp.Func != "compute" || bp.Condition != "" {
			t.Fatalf("break compute: %+v", bp)
		}
	}
	if n := gdbs(t); n != 1 {
		t.Fatalf("%d gdbs for 4 ranks that share one", n)
	}
	for _, r := range ranks {
		r.must(wire.OpRun, nil, nil)
	}
	for i, r := range ranks[:3] {
		st := r.event(wire.EventStopped)
		if st.Reason != "breakpoint-hit" || st.Breakpoint != 1 || st.Frame.Func != "compute" {
			t.Fatalf("rank %d: %+v", i, st)
		}
		if got := r.print("rank"); got != strconv.Itoa(i) {
			t.Fatalf("rank %d: print rank = %s", i, got)
		}
	}
	// The last rank does not pass compute: it ends.
	if st := ranks[3].event(wire.EventExited); st.Code != 0 {
		t.Fatalf("rank 3: %+v", st)
	}
	if !strings.Contains(ranks[3].output.String(), "hello from rank 3 of 4: 300") {
		t.Fatalf("rank 3's output: %q", ranks[3].output.String())
	}
	// [1] next while ranks 0 and 2 run to their ends.
	ranks[0].must(wire.OpCont, nil, nil)
	ranks[1].must(wire.OpNext, wire.Count{N: 1}, nil)
	ranks[2].must(wire.OpCont, nil, nil)
	if st := ranks[1].event(wire.EventStopped); st.Reason != "end-stepping-range" || st.Frame.Line != 16 {
		t.Fatalf("rank 1's next: %+v", st)
	}
	for _, i := range []int{0, 2} {
		if st := ranks[i].event(wire.EventExited); st.Code != 0 {
			t.Fatalf("rank %d: %+v", i, st)
		}
		want := fmt.Sprintf("hello from rank %d of 4: %d", i, i%2*10+4)
		if !strings.Contains(ranks[i].output.String(), want) {
			t.Fatalf("rank %d's output %q lacks %q", i, ranks[i].output.String(), want)
		}
	}
	if got := ranks[1].print("value"); got != "1" {
		t.Fatalf("rank 1: value = %s", got)
	}
	var list []wire.Breakpoint
	ranks[1].must(wire.OpBreakList, nil, &list)
	if len(list) != 1 || list[0].Number != 1 || list[0].Condition != "" {
		t.Fatalf("rank 1's breakpoints: %+v", list)
	}
	ranks[1].must(wire.OpCont, nil, nil)
	if st := ranks[1].event(wire.EventExited); st.Code != 0 {
		t.Fatalf("rank 1: %+v", st)
	}
}

// A breakpoint every rank of a gdb shares is not kept to their
// inferiors; a rank that joins the gdb later, and has not set it, runs
// past it to its end while the others stop there.
func TestSharedGDBBreakpointOfEveryRankAndALaterOne(t *testing.T) {
	testenv.RequireTool(t, "gdb")
	program := filepath.Join(testenv.Examples(t), "plain")
	pool := &gdbmi.Pool{PerGDB: 4, Start: func(context.Context) (*gdbmi.GDB, error) { return gdbmi.Start("gdb") }}
	join := func(i int) *rank {
		r := &rank{t: t, b: gdbmi.NewShared(backend.Config{Rank: i, Size: 5}, pool, gdbmi.Share{})}
		t.Cleanup(func() { r.b.Close() })
		r.start(program)
		return r
	}
	var ranks []*rank
	for i := range 3 {
		ranks = append(ranks, join(i))
		ranks[i].must(wire.OpBreak, wire.Break{Location: "compute"}, nil)
	}
	late := join(3)
	if n := gdbs(t); n != 1 {
		t.Fatalf("%d gdbs for 4 ranks that share one", n)
	}
	for _, r := range append(ranks, late) {
		r.must(wire.OpRun, nil, nil)
	}
	if st := late.event(wire.EventExited); st.Code != 0 || !strings.Contains(late.output.String(), "hello from rank 3 of 5: 15") {
		t.Fatalf("rank 3, without the breakpoint: %+v, output %q", st, late.output.String())
	}
	for i, r := range ranks {
		if st := r.event(wire.EventStopped); st.Reason != "breakpoint-hit" || st.Frame.Func != "compute" {
			t.Fatalf("rank %d: %+v", i, st)
		}
	}
}

// A process stops as a whole: at a breakpoint in one thread, its other
// threads are stopped too, numbered as the rank's own gdb would.
func TestSharedGDBStopsEveryThread(t *testing.T) {
	bin := testenv.Examples(t)
	ranks := sharing(t, 2, 2, filepath.Join(bin, "threads"))
	runTo(t, ranks, "ready")
	for i, r := range ranks {
		var threads []wire.Thread
		r.must(wire.OpThreads, nil, &threads)
		if len(threads) != 3 {
			t.Fatalf("rank %d's threads: %+v", i, threads)
		}
		for j, th := range threads {
			if th.ID != j+1 || th.State != "stopped" || th.Current != (j == 0) {
				t.Fatalf("rank %d's thread %d: %+v", i, j+1, th)
			}
		}
		var th wire.Thread
		r.must(wire.OpThread, wire.Count{N: 2}, &th)
		if th.ID != 2 || th.Frame.Func == "ready" {
			t.Fatalf("rank %d: thread 2: %+v", i, th)
		}
		r.must(wire.OpThread, wire.Count{N: 1}, &th)
	}
	ranks[0].must(wire.OpNext, wire.Count{N: 1}, nil)
	if st := ranks[0].event(wire.EventStopped); st.Reason != "end-stepping-range" || st.Frame.Func != "ready" {
		t.Fatalf("rank 0's next: %+v", st)
	}
	var threads []wire.Thread
	ranks[0].must(wire.OpThreads, nil, &threads)
	for _, th := range threads {
		if th.State != "stopped" {
			t.Fatalf("rank 0's threads after next: %+v", threads)
		}
	}
	for i, r := range ranks {
		r.must(wire.OpCont, nil, nil)
		if st := r.event(wire.EventExited); st.Code != 0 {
			t.Fatalf("rank %d: %+v", i, st)
		}
	}
}

// A rank that faults is stopped at the fault, its handler not run, while
// the ranks beside it in the gdb run on, and stop when halted.
func TestSharedGDBFault(t *testing.T) {
	bin := testenv.Examples(t)
	ranks := sharing(t, 3, 3, filepath.Join(bin, "fault"))
	for _, r := range ranks {
		r.must(wire.OpRun, nil, nil)
	}
	st := ranks[1].event(wire.EventStopped)
	if st.Signal != "SIGSEGV" || st.Frame.Func != "fail" {
		t.Fatalf("rank 1: %+v", st)
	}
	for _, i := range []int{0, 2} {
		var now wire.State
		ranks[i].must(wire.OpStatus, nil, &now)
		if now.State != wire.StateRunning {
			t.Fatalf("rank %d while rank 1 is at its fault: %+v", i, now)
		}
		ranks[i].must(wire.OpHalt, nil, nil)
		if st := ranks[i].event(wire.EventStopped); st.Signal != "SIGINT" {
			t.Fatalf("rank %d halted: %+v", i, st)
		}
	}
	var stack wire.Stack
	ranks[1].must(wire.OpWhere, nil, &stack)
	if len(stack.Frames) < 2 || stack.Frames[0].Func != "fail" || stack.Frames[1].Func != "worker" {
		t.Fatalf("rank 1's stack: %+v", stack)
	}
	if strings.Contains(ranks[1].output.String(), "handler ran") {
		t.Fatal("rank 1's handler ran")
	}
	for i, r := range ranks {
		r.must(wire.OpKill, nil, nil)
		if st := r.event(wire.EventExited); st.Reason != "killed" {
			t.Fatalf("rank %d killed: %+v", i, st)
		}
	}
}

// A gdb killed takes only its own ranks: told once, with the cause; the
// ranks in the other gdb go on.
func TestSharedGDBKilled(t *testing.T) {
	bin := testenv.Examples(t)
	ranks := sharing(t, 4, 2, filepath.Join(bin, "plain"))
	runTo(t, ranks[:3], "compute")
	if n := gdbs(t); n != 2 {
		t.Fatalf("%d gdbs for 4 ranks, 2 a gdb", n)
	}
	first := parent(t, gdbmi.Pid(ranks[0].b))
	if other := parent(t, gdbmi.Pid(ranks[2].b)); other == first || parent(t, gdbmi.Pid(ranks[1].b)) != first {
		t.Fatalf("ranks 0 and 1 in gdb %d, rank 2 in %d", first, other)
	}
	syscall.Kill(first, syscall.SIGKILL)
	for _, i := range []int{0, 1} {
		if _, st := ranks[i].next(5*time.Second, wire.EventError); !strings.Contains(st.Reason, "killed") {
			t.Fatalf("rank %d: %q", i, st.Reason)
		}
		if _, err := ranks[i].do(wire.OpWhere, nil); err == nil {
			t.Fatalf("rank %d answered where after its gdb's end", i)
		}
	}
	if got := ranks[2].print("rank"); got != "2" {
		t.Fatalf("rank 2 after the other gdb's end: %s", got)
	}
	ranks[2].must(wire.OpCont, nil, nil)
	if st := ranks[2].event(wire.EventExited); st.Code != 0 {
		t.Fatalf("rank 2: %+v", st)
	}
}

// A rank's child (fork, then exec) is left alone: every rank stops at
// the breakpoint after it, with the child's status.
func TestSharedGDBFork(t *testing.T) {
	bin := testenv.Examples(t)
	ranks := sharing(t, 3, 3, filepath.Join(bin, "forks"))
	runTo(t, ranks, "joined")
	for i, r := range ranks {
		if got := r.print("status"); got != "7" {
			t.Fatalf("rank %d: status = %s", i, got)
		}
	}
	for i, r := range ranks {
		r.must(wire.OpCont, nil, nil)
		if st := r.event(wire.EventExited); st.Code != 0 {
			t.Fatalf("rank %d: %+v", i, st)
		}
	}
}

// A job's starter kills its ranks as the debugger kills them (a job
// ends once one rank dies): each kill is done, each rank ends once, and
// the gdb they share lives on for the rank it still holds.
func TestSharedGDBKillAsJobEnds(t *testing.T) {
	bin := testenv.Examples(t)
	ranks := sharing(t, 5, 5, filepath.Join(bin, "threads"))
	runTo(t, ranks, "ready")
	for _, r := range ranks[:4] {
		syscall.Kill(gdbmi.Pid(r.b), syscall.SIGKILL)
	}
	for i, r := range ranks[:4] {
		// Done, or refused for the death the rank was told of first.
		if _, err := r.do(wire.OpKill, nil); err != nil && !strings.Contains(err.Error(), "was killed by SIGKILL") {
			t.Fatalf("rank %d's kill: %v", i, err)
		}
		if op, st := r.next(5*time.Second, wire.EventExited, wire.EventStopped); op != wire.EventExited {
			t.Fatalf("rank %d after its kill: %s %+v", i, op, st)
		}
		var st wire.State
		r.must(wire.OpStatus, nil, &st)
		if st.State != wire.StateExited {
			t.Fatalf("rank %d's status after its kill: %+v", i, st)
		}
	}
	if got := ranks[4].print("threads"); got != "3" {
		t.Fatalf("rank 4 after the others' kills: %q", got)
	}
	ranks[4].must(wire.OpKill, nil, nil)
	if st := ranks[4].event(wire.EventExited); st.Reason != "killed" {
		t.Fatalf("rank 4 killed: %+v", st)
	}
}

// A host's gdbs start side by side: six ranks on gdbs of two start three
// gdbs at once, not each after the one before has taken its ranks.
func TestSharedGDBsStartSideBySide(t *testing.T) {
	testenv.RequireTool(t, "gdb")
	bin := testenv.Examples(t)
	const n, per, want = 6, 2, 3
	var mu sync.Mutex
	starting, all := 0, make(chan struct{})
	pool := &gdbmi.Pool{PerGDB: per, Start: func(ctx context.Context) (*gdbmi.GDB, error) {
		mu.Lock()
		starting++
		if starting == want {
			close(all)
		}
		mu.Unlock()
		// Each start waits for the others: one after another, the first
		// would wait alone until its deadline.
		select {
		case <-all:
		case <-time.After(20 * time.Second):
			return nil, fmt.Errorf("gdb %d of %d started alone", starting, want)
		}
		return gdbmi.Start("gdb")
	}}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	errs := make(chan error, n)
	for i := range n {
		b := gdbmi.NewShared(backend.Config{Rank: i, Size: n}, pool, gdbmi.Share{})
		t.Cleanup(func() { b.Close() })
		b.Do(ctx, wire.OpStart, wire.MustEncode(wire.Start{Program: filepath.Join(bin, "plain")}), func(_ []byte, err error) { errs <- err })
	}
	for range n {
		select {
		case err := <-errs:
			if err != nil {
				t.Error(err)
			}
		case <-ctx.Done():
			t.Fatal("no answer to start within a minute")
		}
	}
	if got := gdbs(t); got != want {
		t.Errorf("%d gdbs, want %d", got, want)
	}
}

// What a rank does through gdb's CLI is its own: a breakpoint it makes
// stops it alone, under its own number, a watchpoint's stop carries the
// rank's number for it, and list goes on from the rank's own last line
// whatever the other rank listed meanwhile.
func TestSharedGDBCLIIsTheRanks(t *testing.T) {
	bin := testenv.Examples(t)
	ranks := sharing(t, 2, 2, filepath.Join(bin, "plain"))
	var text wire.Text
	ranks[0].must(wire.OpRaw, wire.Text{Text: "break compute"}, &text)
	ranks[1].must(wire.OpBreak, wire.Break{Location: "main"}, nil)
	refused := ranks[1].watchRefused("counter")
	if !refused {
		ranks[1].must(wire.OpWatch, wire.Watch{Expr: "counter", Mode: "write"}, nil)
	}
	for _, r := range ranks {
		r.must(wire.OpRun, nil, nil)
	}
	if st := ranks[0].event(wire.EventStopped); st.Breakpoint != 1 || st.Frame.Func != "compute" {
		t.Fatalf("rank 0: %+v, want a stop at its breakpoint 1 in compute", st)
	}
	if st := ranks[1].event(wire.EventStopped); st.Breakpoint != 1 || st.Frame.Func != "main" {
		t.Fatalf("rank 1: %+v, want a stop at its breakpoint 1 in main", st)
	}
	if !refused {
		ranks[1].must(wire.OpCont, nil, nil)
		if st := ranks[1].event(wire.EventStopped); st.Reason != "watchpoint-trigger" || st.Breakpoint != 2 {
			t.Fatalf("rank 1: %+v, want a stop at its watchpoint 2 (rank 0's compute is not its)", st)
		}
	}
	first := func(out string) string { return strings.SplitN(out, "\t", 2)[0] }
	ranks[0].must(wire.OpList, wire.Text{}, &text)
	if got := first(text.Text); got != "10" {
		t.Fatalf("rank 0's list starts at %s, want 10 (around compute's line 15): %q", got, text.Text)
	}
	ranks[1].must(wire.OpList, wire.Text{}, &text)
	ranks[0].must(wire.OpList, wire.Text{}, &text)
	if got := first(text.Text); got != "20" {
		t.Fatalf("rank 0's second list starts at %s, want 20: %q", got, text.Text)
	}
}

// A breakpoint in Fortran on two ranks of a gdb, with a condition in Fortran:
// gdb parses a condition in the location's language (C's && would read as
// & and an address-of, whose failing evaluation stops every time), so the
// ranks' part of it is joined in Fortran's words. A false condition lets
// both ranks run to their ends; a true one stops them.
func TestSharedGDBFortranCondition(t *testing.T) {
	bin := testenv.Examples(t)
	for _, c := range []struct {
		cond  string
		stops bool
	}{{"p%x > 9", false}, {"p%x > 1 .and. g(4) == 2", true}} {
		ranks := sharing(t, 2, 2, filepath.Join(bin, "shapes"))
		for _, r := range ranks {
			var bp wire.Breakpoint
			r.must(wire.OpBreak, wire.Break{Location: "report", Condition: c.cond}, &bp)
			if bp.Condition != c.cond {
				t.Fatalf("break report if %s: %+v", c.cond, bp)
			}
		}
		for _, r := range ranks {
			r.must(wire.OpRun, nil, nil)
		}
		for i, r := range ranks {
			if c.stops {
				if st := r.event(wire.EventStopped); st.Breakpoint != 1 || st.Frame.Func != "shapes::report" {
					t.Fatalf("if %s: rank %d: %+v, want a stop at breakpoint 1", c.cond, i, st)
				}
			} else if st := r.event(wire.EventExited); st.Code != 0 {
				t.Fatalf("if %s: rank %d: %+v, want its end", c.cond, i, st)
			}
		}
	}
}

// Conditions on a local variable, set while the ranks' programs run in
// one gdb at the same addresses: each rank's condition is read in its own
// program (gdb reads one in the selected inferior's, where the local is
// another rank's, whose failing evaluation would stop the rank), whether
// given with the breakpoint or later.
func TestSharedGDBConditionOnALocal(t *testing.T) {
	bin := testenv.Examples(t)
	ranks := sharing(t, 4, 4, filepath.Join(bin, "plain"))
	runTo(t, ranks, "main")
	for _, r := range ranks {
		var bp wire.Breakpoint
		r.must(wire.OpBreak, wire.Break{Location: "plain.c:15"}, &bp)
		r.must(wire.OpCondition, wire.Condition{ID: bp.Number, Expr: "rank == 2"}, nil)
		r.must(wire.OpBreak, wire.Break{Location: "plain.c:16", Condition: "rank == 1"}, nil)
		r.must(wire.OpCont, nil, nil)
	}
	// Rank 3 does not pass compute, and rank 0 meets neither condition.
	for _, i := range []int{0, 3} {
		if st := ranks[i].event(wire.EventExited); st.Code != 0 {
			t.Fatalf("rank %d: %+v, want its end", i, st)
		}
	}
	if st := ranks[1].event(wire.EventStopped); st.Breakpoint != 3 || st.Frame.Line != 16 {
		t.Fatalf("rank 1: %+v, want a stop at its breakpoint 3, line 16", st)
	}
	if st := ranks[2].event(wire.EventStopped); st.Breakpoint != 2 || st.Frame.Line != 15 {
		t.Fatalf("rank 2: %+v, want a stop at its breakpoint 2, line 15", st)
	}
}

// A rank conditions a breakpoint while its program runs, then another
// rank of the gdb finishes a function: the finish stops where it returns
// (gdb 13, given the condition aimed at the running rank's inferior
// rather than its thread, planted the finish's breakpoint for the wrong
// program, and the rank ran on).
func TestSharedGDBFinishAfterARunningRanksCondition(t *testing.T) {
	bin := testenv.Examples(t)
	ranks := sharing(t, 2, 2, filepath.Join(bin, "plain"), "30")
	runTo(t, ranks, "main")
	var bp wire.Breakpoint
	ranks[1].must(wire.OpBreak, wire.Break{Location: "compute"}, &bp) // the last rank does not pass it
	ranks[1].must(wire.OpCont, nil, nil)
	ranks[0].must(wire.OpBreak, wire.Break{Location: "compute"}, nil)
	ranks[0].must(wire.OpCont, nil, nil)
	if st := ranks[0].event(wire.EventStopped); st.Frame.Func != "compute" {
		t.Fatalf("rank 0: %+v, want a stop in compute", st)
	}
	ranks[1].must(wire.OpCondition, wire.Condition{ID: bp.Number, Expr: "rank > 5"}, nil)
	ranks[0].must(wire.OpFinish, nil, nil)
	if st := ranks[0].event(wire.EventStopped); st.Reason != "function-finished" || st.Frame.Func != "main" {
		t.Fatalf("rank 0's finish: %+v, want a stop in main", st)
	}
}

// A gdb that dies takes its hold on its ranks' processes with it: closing
// a rank attached to end with the session (Kill) kills the process at
// once, rather than waiting for the dead gdb to let go of it.
func TestSharedGDBDiesUnderAnAttachedRank(t *testing.T) {
	testenv.RequireTool(t, "gdb")
	pool := &gdbmi.Pool{PerGDB: 2, Start: func(context.Context) (*gdbmi.GDB, error) { return gdbmi.Start("gdb") }}
	cmd, done := sleeper(t)
	r := &rank{t: t, b: gdbmi.NewShared(backend.Config{Rank: 0, Size: 1}, pool, gdbmi.Share{})}
	t.Cleanup(func() { r.b.Close() })
	r.must(wire.OpAttach, wire.Attach{Pids: []int{cmd.Process.Pid}, Stop: true, Kill: true}, nil)
	syscall.Kill(testenv.Child(t, os.Getpid(), "gdb"), syscall.SIGKILL)
	if _, st := r.next(5*time.Second, wire.EventError); !strings.Contains(st.Reason, "killed") {
		t.Fatalf("error event: %q", st.Reason)
	}
	closed := make(chan error, 1)
	go func() { closed <- r.b.Close() }()
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Fatal("Close still waits 10s after for the dead gdb to let go of the process")
	}
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the process, attached to end with the session, still runs 10s after Close")
	}
}
