package console

import (
	"context"
	"errors"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sdm-hpc/sdm/client"
	"github.com/sdm-hpc/sdm/wire"
)

// endingTree is a fake tree whose session ends: its events end then.
type endingTree struct {
	*fakeTree
	once   sync.Once
	closed chan struct{}
	ends   int
	endErr error
}

func newEndingTree(f *fakeTree) *endingTree {
	return &endingTree{fakeTree: f, closed: make(chan struct{})}
}

func (e *endingTree) NextEvent(ctx context.Context) (client.Event, error) {
	select {
	case <-ctx.Done():
		return client.Event{}, ctx.Err()
	case <-e.closed:
		return client.Event{}, errors.New("session closed")
	}
}

func (e *endingTree) End(time.Duration) error {
	e.ends++
	e.once.Do(func() { close(e.closed) })
	return e.endErr
}

func (e *endingTree) session() Session { return Session{Tree: e, End: e.End} }

func runCommands(t *testing.T, e *endingTree, ctx context.Context, cmds Commands) (string, string, error) {
	t.Helper()
	var out, complaints strings.Builder
	cmds.Errors = &complaints
	err := e.session().Run(ctx, &out, Options{}, cmds, func(*Console) error { return nil })
	if e.ends != 1 {
		t.Errorf("session ended %d times, want once", e.ends)
	}
	return out.String(), complaints.String(), err
}

func TestSessionRunsItsCommandsThenEnds(t *testing.T) {
	f := newFakeTree(4, atBreakpoint)
	out, complaints, err := runCommands(t, newEndingTree(f), context.Background(),
		Commands{Exprs: []string{"print x", "frobnicate", "[1] print y"}})
	if !errors.Is(err, ErrScriptErrors) {
		t.Errorf("a command typed wrong ended the session with %v, want ErrScriptErrors", err)
	}
	if !strings.Contains(complaints, "frobnicate") {
		t.Errorf("complaints %q do not name the command typed wrong", complaints)
	}
	if sent := f.sent(); len(sent) != 2 || !sent[1].ranks.Equal(wire.Single(1)) {
		t.Errorf("sent %v: want the two good commands, the second to rank 1", sent)
	}
	if !strings.Contains(out, "[0-3] x = 42") {
		t.Errorf("printed %q", out)
	}
}

func TestSessionOfFailedRanksFails(t *testing.T) {
	f := newFakeTree(2, atBreakpoint)
	f.answer = func(_ context.Context, ranks wire.RankSet, _ string) ([]wire.Group, error) {
		return []wire.Group{{Ranks: ranks, Status: wire.StatusError, Body: []byte("No symbol")}}, nil
	}
	_, _, err := runCommands(t, newEndingTree(f), context.Background(), Commands{Exprs: []string{"print x"}})
	if !errors.Is(err, ErrRanksFailed) {
		t.Errorf("a session whose ranks answered errors ended with %v, want ErrRanksFailed", err)
	}
}

func TestSessionEndErrorIsItsError(t *testing.T) {
	e := newEndingTree(newFakeTree(2, atBreakpoint))
	e.endErr = errors.New("rank 1: server lost")
	_, _, err := runCommands(t, e, context.Background(), Commands{Exprs: []string{"print x", "quit"}})
	if err == nil || !strings.Contains(err.Error(), "rank 1: server lost") || errors.Is(err, ErrQuit) {
		t.Errorf("ended with %v: want the end's error alone", err)
	}
}

// The session ends with its context even while its commands wait for
// input, and Ended says what that means.
func TestSessionEndsWithItsContext(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	// The commands' goroutine, left waiting for input, may still look at
	// r after the session ended: closing w ends it, r is left to it.
	defer w.Close()
	e := newEndingTree(newFakeTree(2, atBreakpoint))
	s := e.session()
	cut := errors.New("cut short")
	s.Ended = func(ctx context.Context, endErr error) error {
		if ctx.Err() != nil {
			return cut
		}
		return nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() {
		ran <- s.Run(ctx, new(strings.Builder), Options{}, Commands{In: r, Errors: new(strings.Builder)},
			func(*Console) error { return nil })
	}()
	cancel()
	select {
	case err := <-ran:
		if !errors.Is(err, cut) {
			t.Errorf("session cut short ended with %v, want Ended's error", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("session waiting for input did not end within 10s of its context")
	}
}
