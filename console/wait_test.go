package console

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sdm-hpc/sdm/client"
	"github.com/sdm-hpc/sdm/wire"
)

// fakeTree is a job whose ranks do what the test says: status answers
// from their states, halt stops those that run, next sets them stepping
// from where they are and never comes back, print blocks until its
// context ends.
type fakeTree struct {
	mu     sync.Mutex
	states []wire.State
	events chan client.Event
	done   chan struct{}
	asked  chan struct{} // signalled at each status
}

func newFakeTree(n int, st wire.State) *fakeTree {
	f := &fakeTree{states: make([]wire.State, n), events: make(chan client.Event, 64),
		done: make(chan struct{}), asked: make(chan struct{}, 1)}
	for i := range f.states {
		f.states[i] = st
	}
	return f
}

var (
	runningState = wire.State{State: wire.StateRunning}
	atBreakpoint = wire.State{State: wire.StateStopped, Reason: "breakpoint-hit", Breakpoint: 1,
		Frame: wire.Frame{Func: "pass", File: "ring.c", Line: 10}}
	halted = wire.State{State: wire.StateStopped, Reason: "signal-received", Signal: "SIGINT",
		Frame: wire.Frame{Func: "PMPI_Recv", From: "libmpi.so.40"}}
)

func (f *fakeTree) Size() int { return len(f.states) }

func (f *fakeTree) Done() <-chan struct{} { return f.done }

func (f *fakeTree) NextEvent(ctx context.Context) (client.Event, error) {
	select {
	case ev := <-f.events:
		return ev, nil
	case <-ctx.Done():
		return client.Event{}, ctx.Err()
	}
}

// set gives ranks a state, with the event that reports it.
func (f *fakeTree) set(ranks wire.RankSet, st wire.State, event string) {
	f.mu.Lock()
	ranks.Each(func(r int) bool { f.states[r] = st; return true })
	f.mu.Unlock()
	f.events <- client.Event{Op: event, Group: wire.Group{Ranks: ranks, Body: wire.MustEncode(st)}}
}

func (f *fakeTree) Command(ctx context.Context, ranks wire.RankSet, op string, body []byte, timeout time.Duration) ([]wire.Group, error) {
	switch op {
	case wire.OpStatus:
		select {
		case f.asked <- struct{}{}:
		default:
		}
	case wire.OpHalt:
		var run wire.RankSet
		f.mu.Lock()
		ranks.Each(func(r int) bool {
			if f.states[r].State == wire.StateRunning {
				run = run.Union(wire.Single(r))
			}
			return true
		})
		f.mu.Unlock()
		if !run.Empty() {
			f.set(run, halted, wire.EventStopped)
		}
	case wire.OpNext:
		f.mu.Lock()
		ranks.Each(func(r int) bool {
			f.states[r] = wire.State{State: wire.StateRunning, Reason: wire.OpNext, Frame: f.states[r].Frame}
			return true
		})
		f.mu.Unlock()
	case wire.OpPrint:
		<-ctx.Done()
		return nil, ctx.Err()
	}
	// Answers merge by identical bytes, as the tree merges them.
	f.mu.Lock()
	defer f.mu.Unlock()
	var groups []wire.Group
	ranks.Each(func(r int) bool {
		groups = wire.AppendMerged(groups, wire.Group{Ranks: wire.Single(r), Body: wire.MustEncode(f.states[r])},
			func(g *wire.Group) *wire.RankSet { return &g.Ranks },
			func(a, b *wire.Group) bool { return string(a.Body) == string(b.Body) }, nil)
		return true
	})
	return groups, nil
}

// buffer collects what a console prints from several goroutines.
type buffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (b *buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// fakeConsole is a console on f that prints its events until the test ends.
func fakeConsole(t *testing.T, f *fakeTree, opts Options) (*Console, *buffer) {
	t.Helper()
	out := &buffer{}
	c := New(f, out, opts)
	ctx, cancel := context.WithCancel(context.Background())
	printed := make(chan struct{})
	go func() {
		defer close(printed)
		c.PrintEvents(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		<-printed
	})
	return c, out
}

// execAsync runs line and returns its error on the channel; the command
// has asked for a status once the first value arrives on f.asked.
func execAsync(ctx context.Context, c *Console, line string) <-chan error {
	errc := make(chan error, 1)
	go func() { errc <- c.Exec(ctx, line) }()
	return errc
}

// result waits for a command started by execAsync.
func result(t *testing.T, errc <-chan error) error {
	t.Helper()
	select {
	case err := <-errc:
		return err
	case <-time.After(10 * time.Second):
		t.Fatal("the command did not return within 10s")
		return nil
	}
}

func asked(t *testing.T, f *fakeTree) {
	t.Helper()
	select {
	case <-f.asked:
	case <-time.After(10 * time.Second):
		t.Fatal("no status asked within 10s")
	}
}

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
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("want two notes, got %q", out.String())
	}
	var step, waitAny map[string]any
	if err := json.Unmarshal([]byte(lines[0]), &step); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(lines[1]), &waitAny); err != nil {
		t.Fatal(err)
	}
	from, _ := step["from"].(map[string]any)
	if step["ranks"] != "1-2" || step["note"] != "still-running" || step["command"] != "next" || step["step"] != "next" ||
		step["timed_out"] != true || step["after"] != 0.05 || step["hint"] != stepHint || from["func"] != "pass" || from["line"] != 10.0 {
		t.Errorf("step note: %s", lines[0])
	}
	if waitAny["ranks"] != "0,4" || waitAny["note"] != "still-running" || waitAny["command"] != "wait any" || waitAny["timed_out"] != nil {
		t.Errorf("wait any note: %s", lines[1])
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
	c, out := fakeConsole(t, f, Options{JSON: true})
	ctx, cancel := context.WithCancel(context.Background())
	errc := execAsync(ctx, c, "print slow()")
	cancel()
	if err := result(t, errc); !errors.Is(err, ErrInterrupted) {
		t.Fatalf("interrupted print: %v", err)
	}
	want := `{"abandoned":true,"command":"print","count":2,"note":"interrupted","ranks":"0-1"}` + "\n"
	if out.String() != want {
		t.Fatalf("printed %q, want %q", out.String(), want)
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
