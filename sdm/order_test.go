package sdm_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sdm-hpc/sdm/backend"
	"github.com/sdm-hpc/sdm/client"
	"github.com/sdm-hpc/sdm/wire"
)

// burst is a backend that, asked anything, sends n events made by event
// and answers right after.
type burst struct {
	events chan backend.Event
	n      int
	event  func(i int) backend.Event
}

func newBurst(n int, event func(i int) backend.Event) *burst {
	return &burst{events: make(chan backend.Event, 2*n), n: n, event: event}
}

func (b *burst) Do(_ context.Context, _ string, _ []byte, done func([]byte, error)) {
	for i := range b.n {
		b.events <- b.event(i)
	}
	done(nil, nil)
}

func (b *burst) Events() <-chan backend.Event { return b.events }

func (b *burst) Close() error {
	close(b.events)
	return nil
}

// An answer never overtakes the news its backend sent before it, what a
// rank does when it stops and is asked its status at once: once the
// front end has the answer, it has every event of the burst.
func TestAnswerAfterNews(t *testing.T) {
	const news = 2000
	tt := launchTree(t, 1, 0, nil, func(int) backend.Backend {
		return newBurst(news, func(i int) backend.Event {
			return backend.Event{Op: wire.EventWarning, Body: []byte(strconv.Itoa(i))}
		})
	})
	s := tt.session
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	check := func(tree interface {
		Command(context.Context, wire.RankSet, string, []byte, time.Duration) ([]wire.Group, error)
		NextEvent(context.Context) (client.Event, error)
	}) {
		t.Helper()
		for round := range 10 {
			if _, err := tree.Command(ctx, wire.All(1), wire.OpStatus, nil, 10*time.Second); err != nil {
				t.Fatal(err)
			}
			// Only what has arrived already: a cancelled context does not wait.
			now, stop := context.WithCancel(ctx)
			stop()
			got := 0
			for {
				ev, err := tree.NextEvent(now)
				if err != nil {
					break
				}
				if ev.Op == wire.EventWarning {
					got++
				}
			}
			if got != news {
				t.Fatalf("%T, round %d: %d of the %d events sent before the answer had arrived with it", tree, round, got, news)
			}
		}
	}
	check(s)
	// The front end's relay (restart) keeps the order too.
	relay := client.NewRelay(s)
	defer relay.Close()
	check(relay)
	// And the view of several jobs as one (sdm listen).
	joined := client.NewJoined()
	defer joined.Close()
	if _, err := joined.Add(s); err != nil {
		t.Fatal(err)
	}
	check(joined)
}

// Quit ends the session only after everything the ranks wrote before it
// has reached the front end, through every level of the tree, even when
// the output streams are full as the quit goes down.
func TestQuitDeliversAllOutput(t *testing.T) {
	const size, pieces, pieceSize = 4, 200, 16 << 10
	text := wire.MustEncode(wire.Output{Stream: "stdout", Text: strings.Repeat("x", pieceSize-1) + "\n"})
	tt := launchTree(t, size, 2, nil, func(int) backend.Backend {
		return newBurst(pieces, func(int) backend.Event { return backend.Event{Op: wire.EventOutput, Body: text} })
	})
	s := tt.session
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	read := make(chan int)
	go func() {
		bytes := 0
		for {
			ev, err := s.NextEvent(ctx)
			if err != nil {
				read <- bytes
				return
			}
			if ev.Op == wire.EventOutput {
				var o wire.Output
				if err := wire.Decode(ev.Group.Body, &o); err == nil {
					bytes += len(o.Text) * ev.Group.Ranks.Count()
				}
			}
		}
	}()
	if _, err := s.Command(ctx, wire.All(size), wire.OpStatus, nil, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Quit(ctx, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	if got, want := <-read, size*pieces*pieceSize; got != want {
		t.Fatalf("the front end got %d bytes of output before the session ended, of the %d the ranks wrote", got, want)
	}
}
