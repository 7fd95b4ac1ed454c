package console

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sdm-hpc/sdm/client"
	"github.com/sdm-hpc/sdm/wire"
)

// sentCommand is one command a console sent to its tree.
type sentCommand struct {
	ranks   wire.RankSet
	op      string
	body    []byte
	timeout time.Duration
}

// fakeTree is a job whose ranks do what the test says, as a console sees
// it through its Tree. By default status answers from the ranks' states,
// halt stops those that run (and says so as news), next sets them
// stepping from where they are and never comes back, print answers the
// value "42", and any other op answers the ranks' states, merged by
// identical bytes as the tree merges them. answer, when set, answers
// every op instead. Every command sent is recorded.
type fakeTree struct {
	answer func(ctx context.Context, ranks wire.RankSet, op string) ([]wire.Group, error)

	mu     sync.Mutex
	states []wire.State
	calls  []sentCommand
	events chan client.Event
	done   chan struct{}
	asked  chan struct{} // signalled at each command
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

// NextEvent gives the news it holds before it looks at ctx, as a
// client.Session does.
func (f *fakeTree) NextEvent(ctx context.Context) (client.Event, error) {
	select {
	case ev := <-f.events:
		return ev, nil
	default:
	}
	select {
	case ev := <-f.events:
		return ev, nil
	case <-ctx.Done():
		return client.Event{}, ctx.Err()
	}
}

// sent is every command sent so far.
func (f *fakeTree) sent() []sentCommand {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]sentCommand(nil), f.calls...)
}

// set gives ranks a state, with the event that reports it.
func (f *fakeTree) set(ranks wire.RankSet, st wire.State, event string) {
	f.mu.Lock()
	ranks.Each(func(r int) bool { f.states[r] = st; return true })
	f.mu.Unlock()
	f.events <- client.Event{Op: event, Group: wire.Group{Ranks: ranks, Body: wire.MustEncode(st)}}
}

func (f *fakeTree) Command(ctx context.Context, ranks wire.RankSet, op string, body []byte, timeout time.Duration) ([]wire.Group, error) {
	f.mu.Lock()
	f.calls = append(f.calls, sentCommand{ranks, op, body, timeout})
	f.mu.Unlock()
	select {
	case f.asked <- struct{}{}:
	default:
	}
	if f.answer != nil {
		return f.answer(ctx, ranks, op)
	}
	switch op {
	case wire.OpPrint:
		return []wire.Group{{Ranks: ranks, Body: wire.MustEncode(wire.Text{Text: "42"})}}, nil
	case wire.OpHalt:
		if run := f.running(ranks); !run.Empty() {
			f.set(run, halted, wire.EventStopped)
		}
	case wire.OpNext:
		f.mu.Lock()
		ranks.Each(func(r int) bool {
			f.states[r] = wire.State{State: wire.StateRunning, Reason: wire.OpNext, Frame: f.states[r].Frame}
			return true
		})
		f.mu.Unlock()
	}
	return f.stateGroups(ranks), nil
}

// running is the ranks of ranks that run.
func (f *fakeTree) running(ranks wire.RankSet) wire.RankSet {
	f.mu.Lock()
	defer f.mu.Unlock()
	var run wire.RankSet
	ranks.Each(func(r int) bool {
		if f.states[r].State == wire.StateRunning {
			run = run.Union(wire.Single(r))
		}
		return true
	})
	return run
}

// stateGroups is the states of ranks, merged by identical bytes.
func (f *fakeTree) stateGroups(ranks wire.RankSet) []wire.Group {
	f.mu.Lock()
	defer f.mu.Unlock()
	var groups []wire.Group
	ranks.Each(func(r int) bool {
		groups = wire.AppendMerged(groups, wire.Group{Ranks: wire.Single(r), Body: wire.MustEncode(f.states[r])},
			func(g *wire.Group) *wire.RankSet { return &g.Ranks },
			func(a, b *wire.Group) bool { return string(a.Body) == string(b.Body) }, nil)
		return true
	})
	return groups
}

// blocks is an answer that never comes: the command waits for its
// context.
func blocks(ctx context.Context, _ wire.RankSet, _ string) ([]wire.Group, error) {
	<-ctx.Done()
	return nil, ctx.Err()
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

// execLines runs lines on a console of f and returns what it printed and
// the error of the last line.
func execLines(t *testing.T, f *fakeTree, opts Options, lines ...string) (string, error) {
	t.Helper()
	var out strings.Builder
	c := New(f, &out, opts)
	var err error
	for i, l := range lines {
		if err = c.Exec(context.Background(), l); err != nil && i < len(lines)-1 {
			t.Fatalf("%q: %v", l, err)
		}
	}
	return out.String(), err
}

// execAsync runs line and returns its error on the channel.
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

// asked waits until the console sent f a command.
func asked(t *testing.T, f *fakeTree) {
	t.Helper()
	select {
	case <-f.asked:
	case <-time.After(10 * time.Second):
		t.Fatal("no command sent within 10s")
	}
}
