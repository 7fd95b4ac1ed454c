package console

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/sdm-hpc/sdm/client"
	"github.com/sdm-hpc/sdm/wire"
)

func TestWaitAnyReturnsAtTheFirstStop(t *testing.T) {
	f := newFakeTree(4, runningState)
	c, out := fakeConsole(t, f, Options{})
	errc := execAsync(context.Background(), c, "wait any 10")
	asked(t, f)
	f.set(wire.Single(0), atBreakpoint, wire.EventStopped)
	if err := result(t, errc); err != nil {
		t.Fatal(err)
	}
	want := "[0] stopped in pass at ring.c:10 (breakpoint 1)\n[1-3] still running\n"
	if out.String() != want {
		t.Fatalf("wait any printed %q, want %q", out.String(), want)
	}
	if c.Failed() {
		t.Fatal("wait any that returned counts as a failure")
	}
}

func TestWaitAnyWithOneStoppedReturnsAtOnce(t *testing.T) {
	f := newFakeTree(4, runningState)
	f.states[2] = atBreakpoint
	c, out := fakeConsole(t, f, Options{})
	if err := c.Exec(context.Background(), "[1-3] wait any 1000"); err != nil {
		t.Fatal(err)
	}
	if out.String() != "[1,3] still running\n" {
		t.Fatalf("wait any printed %q", out.String())
	}
}

// A wait that runs out of time says which ranks still run, and the
// script goes on: halt, wait and status then work.
func TestWaitTimeoutLetsTheScriptGoOn(t *testing.T) {
	f := newFakeTree(4, runningState)
	f.states[0] = atBreakpoint
	c, out := fakeConsole(t, f, Options{})
	script := "wait 0.05\nhalt\nwait\nstatus\n"
	if err := c.RunScript(context.Background(), strings.NewReader(script), "script", func(err error) { t.Error(err) }); err != nil {
		t.Fatalf("the script ended: %v", err)
	}
	want := "[1-3] still running after 50ms\n" +
		"[1-3] stopped in PMPI_Recv from libmpi.so.40 (SIGINT)\n" +
		"[0] stopped in pass at ring.c:10 (breakpoint 1)\n[1-3] stopped in PMPI_Recv from libmpi.so.40 (SIGINT)\n"
	if out.String() != want {
		t.Fatalf("printed %q, want %q", out.String(), want)
	}
	if !c.Failed() {
		t.Fatal("a wait that ran out of time does not count as a failure")
	}
}

func TestWaitUsage(t *testing.T) {
	c, _ := fakeConsole(t, newFakeTree(2, runningState), Options{})
	for _, line := range []string{"wait x", "wait any any", "wait 1 2", "wait -1", "wait 0", "wait NaN", "wait any 1e20"} {
		if err := c.Exec(context.Background(), line); !errors.Is(err, ErrUsage) {
			t.Errorf("%s: %v, want a usage error", line, err)
		}
	}
}

// A next that does not come back says where it began, once for the ranks
// that stepped from the same line.
func TestStepTimeoutSaysWhereItBegan(t *testing.T) {
	f := newFakeTree(4, atBreakpoint)
	f.states[3].Frame.Line = 11
	c, out := fakeConsole(t, f, Options{Timeout: 50 * time.Millisecond})
	if err := c.Exec(context.Background(), "[1-3] next"); err != nil {
		t.Fatal(err)
	}
	if err := c.Exec(context.Background(), "[1-3] status"); err != nil {
		t.Fatal(err)
	}
	want := "[1-2] still running next from pass at ring.c:10 after 50ms: a call there may wait for other ranks (continue them, or halt)\n" +
		"[3] still running next from pass at ring.c:11 after 50ms: a call there may wait for other ranks (continue them, or halt)\n" +
		"[1-2] running next from pass at ring.c:10\n[3] running next from pass at ring.c:11\n"
	if out.String() != want {
		t.Fatalf("printed %q, want %q", out.String(), want)
	}
	if !c.Failed() {
		t.Fatal("a step that did not come back does not count as a failure")
	}
}

func TestNotesInJSON(t *testing.T) {
	f := newFakeTree(5, atBreakpoint)
	c, out := fakeConsole(t, f, Options{JSON: true, Timeout: 50 * time.Millisecond})
	if err := c.Exec(context.Background(), "[1-2] next"); err != nil {
		t.Fatal(err)
	}
	f.states[0], f.states[4] = runningState, runningState
	if err := c.Exec(context.Background(), "[0,3-4] wait any"); err != nil {
		t.Fatal(err)
	}
	replies := jsonLines(t, out.String())
	if len(replies) != 2 {
		t.Fatalf("want two replies, got %q", out.String())
	}
	step, waitAny := lastGroup(replies[0]), lastGroup(replies[1])
	from, _ := step["from"].(map[string]any)
	if step["ranks"] != "1-2" || step["note"] != "still-running" || step["step"] != "next" ||
		step["timed_out"] != true || step["after"] != 0.05 || step["hint"] != stepHint || from["func"] != "pass" || from["line"] != 10.0 {
		t.Errorf("step note: %v", step)
	}
	if replies[0]["ok"] != false {
		t.Errorf("a step that timed out replied ok: %v", replies[0])
	}
	if waitAny["ranks"] != "0,4" || waitAny["note"] != "still-running" || waitAny["timed_out"] != nil || replies[1]["ok"] != true {
		t.Errorf("wait any note: %v", replies[1])
	}
}

// ^C during a wait stops the wait, says which ranks still run, and
// leaves them running.
func TestInterruptedWait(t *testing.T) {
	f := newFakeTree(4, runningState)
	f.states[0] = atBreakpoint
	c, out := fakeConsole(t, f, Options{})
	ctx, cancel := context.WithCancel(context.Background())
	errc := execAsync(ctx, c, "wait")
	asked(t, f)
	cancel()
	if err := result(t, errc); !errors.Is(err, ErrInterrupted) {
		t.Fatalf("interrupted wait: %v", err)
	}
	if out.String() != "interrupted: [1-3] still running\n" {
		t.Fatalf("printed %q", out.String())
	}
	if c.Failed() {
		t.Fatal("an interrupted wait counts as a failure")
	}
	if f.states[1].State != wire.StateRunning {
		t.Fatal("an interrupted wait halted the ranks")
	}
}

func TestInterruptedCommand(t *testing.T) {
	f := newFakeTree(2, atBreakpoint)
	f.answer = blocks
	c, out := fakeConsole(t, f, Options{JSON: true})
	ctx, cancel := context.WithCancel(context.Background())
	errc := execAsync(ctx, c, "print slow()")
	cancel()
	if err := result(t, errc); !errors.Is(err, ErrInterrupted) {
		t.Fatalf("interrupted print: %v", err)
	}
	replies := jsonLines(t, out.String())
	if len(replies) != 1 || replies[0]["ok"] != false || replies[0]["error"] != "interrupted" {
		t.Fatalf("printed %q, want one reply that failed as interrupted", out.String())
	}
	if note := lastGroup(replies[0]); note["note"] != "interrupted" || note["abandoned"] != true || note["ranks"] != "0-1" {
		t.Fatalf("the reply's note: %v", note)
	}
}

// ^C at the prompt halts the running ranks of the focus set and shows
// their stops; with none running it says nothing.
func TestInterruptHaltsTheFocusSet(t *testing.T) {
	f := newFakeTree(4, runningState)
	f.states[2] = atBreakpoint
	c, out := fakeConsole(t, f, Options{Focus: wire.Range(1, 3)})
	if err := c.Interrupt(context.Background()); err != nil {
		t.Fatal(err)
	}
	want := "halting [1,3]\n[1,3] stopped in PMPI_Recv from libmpi.so.40 (SIGINT)\n"
	if out.String() != want {
		t.Fatalf("printed %q, want %q", out.String(), want)
	}
	if f.states[0].State != wire.StateRunning {
		t.Fatal("a rank outside the focus set was halted")
	}
	if err := c.Interrupt(context.Background()); err != nil {
		t.Fatal(err)
	}
	if out.String() != want {
		t.Fatalf("^C with nothing running printed %q", strings.TrimPrefix(out.String(), want))
	}
}

// Ranks that stop alike show as one line when the wait returns, however
// their stops, their output and the news that they ran interleave, and even when some
// stopped before the wait began: a script holds the news of a continue
// through the wait after it.
func TestStopsBeforeAndDuringAWaitMerge(t *testing.T) {
	f := newFakeTree(4, atBreakpoint)
	running := func(ranks wire.RankSet) {
		f.events <- client.Event{Op: wire.EventRunning, Group: wire.Group{Ranks: ranks}}
	}
	f.answer = func(_ context.Context, ranks wire.RankSet, op string) ([]wire.Group, error) {
		if op == wire.OpCont {
			f.mu.Lock()
			for r := range f.states {
				f.states[r] = runningState
			}
			f.mu.Unlock()
			// Rank 0 runs and stops before the others' news that they
			// run has come, and rank 1's output overtakes that news
			// (output has a stream of its own).
			running(wire.Single(0))
			f.set(wire.Single(0), atBreakpoint, wire.EventStopped)
			f.events <- client.Event{Op: wire.EventOutput, Group: wire.Group{Ranks: wire.Single(1),
				Body: wire.MustEncode(wire.Output{Stream: "tty", Text: "hello\n"})}}
			running(wire.Range(1, 3))
			f.set(wire.Single(1), atBreakpoint, wire.EventStopped)
			return []wire.Group{{Ranks: ranks, Body: wire.MustEncode(runningState)}}, nil
		}
		groups := f.stateGroups(ranks)
		if f.running(ranks).Equal(wire.Range(2, 3)) {
			f.set(wire.Range(2, 3), atBreakpoint, wire.EventStopped) // during the wait
		}
		return groups, nil
	}
	// A window far shorter than a command: news that is not held prints
	// on its own.
	c, out := fakeConsole(t, f, Options{Window: time.Microsecond})
	if err := c.RunScript(context.Background(), strings.NewReader("continue\nwait\n"), "script", func(err error) { t.Error(err) }); err != nil {
		t.Fatal(err)
	}
	if want := "[1] hello\n[0-3] stopped in pass at ring.c:10 (breakpoint 1)\n"; out.String() != want {
		t.Fatalf("printed %q, want %q", out.String(), want)
	}
}

// Sync returns while output keeps coming: a flood never leaves a moment
// without news, in which the printer would see the request.
func TestSyncDuringAFlood(t *testing.T) {
	f := &floodTree{fakeTree: newFakeTree(2, runningState), ended: make(chan struct{}), line: client.Event{Op: wire.EventOutput,
		Group: wire.Group{Ranks: wire.Single(0), Body: wire.MustEncode(wire.Output{Stream: "tty", Text: strings.Repeat("flood ", 200) + "\n"})}}}
	out := &buffer{}
	c := New(f, out, Options{})
	printing, cancel := context.WithCancel(context.Background())
	printed := make(chan struct{})
	go func() {
		defer close(printed)
		c.PrintEvents(printing)
	}()
	defer func() { close(f.ended); cancel(); <-printed }()
	c.hold() // as a script does after run: nothing prints on the window
	ctx, cancelSync := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancelSync()
	c.Sync(ctx)
	if ctx.Err() != nil {
		t.Fatal("Sync did not return within 10s while output kept coming")
	}
	if !strings.HasPrefix(out.String(), "[0] flood flood") {
		t.Fatalf("Sync returned before printing what it held: %.100q", out.String())
	}
}

// floodTree is a tree whose news never runs out until the test ends: a
// line of output is always there to take, whatever the context says.
type floodTree struct {
	*fakeTree
	line  client.Event
	ended chan struct{}
}

func (f *floodTree) NextEvent(ctx context.Context) (client.Event, error) {
	select {
	case <-f.ended:
		<-ctx.Done()
		return client.Event{}, ctx.Err()
	default:
		return f.line, nil
	}
}

// With LiveOutput, the program's output prints while a wait holds the
// rest of the news (a report's log shows it as it comes); the stop still
// waits for the wait's end.
func TestLiveOutputPrintsDuringAWait(t *testing.T) {
	f := newFakeTree(2, runningState)
	c, out := fakeConsole(t, f, Options{LiveOutput: true, Window: 10 * time.Millisecond})
	errc := execAsync(context.Background(), c, "wait 30")
	asked(t, f)
	f.events <- client.Event{Op: wire.EventOutput, Group: wire.Group{Ranks: wire.Single(1), Body: wire.MustEncode(wire.Output{Stream: "tty", Text: "step 1\n"})}}
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(5 * time.Second)
	for !strings.Contains(out.String(), "[1] step 1") {
		select {
		case <-tick.C:
		case <-deadline:
			t.Fatalf("the output did not print during the wait: %q", out.String())
		}
	}
	f.set(wire.All(2), atBreakpoint, wire.EventStopped)
	if err := result(t, errc); err != nil {
		t.Fatal(err)
	}
	if want := "[1] step 1\n[0-1] stopped in pass at ring.c:10 (breakpoint 1)\n"; out.String() != want {
		t.Errorf("printed %q, want %q", out.String(), want)
	}
}
