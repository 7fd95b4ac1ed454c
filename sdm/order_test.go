package sdm_test

import (
	"context"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/sdm-hpc/sdm/backend"
	"github.com/sdm-hpc/sdm/client"
	"github.com/sdm-hpc/sdm/routing"
	"github.com/sdm-hpc/sdm/sdm"
	"github.com/sdm-hpc/sdm/wire"
)

// newsFirst is a backend that, asked anything, sends a burst of events and
// answers right after: what a rank does when it stops and is asked its
// status at once.
type newsFirst struct{ events chan backend.Event }

const burst = 2000

func (b *newsFirst) Do(_ context.Context, _ string, _ []byte, done func([]byte, error)) {
	for i := range burst {
		b.events <- backend.Event{Op: wire.EventWarning, Body: []byte(strconv.Itoa(i))}
	}
	done(nil, nil)
}

func (b *newsFirst) Events() <-chan backend.Event { return b.events }

func (b *newsFirst) Close() error {
	close(b.events)
	return nil
}

// An answer never overtakes the news its backend sent before it: once the
// front end has the answer, it has every event of the burst.
func TestAnswerAfterNews(t *testing.T) {
	cfg := wire.LinkConfig{Key: testKey(2)}
	ln, err := client.Listen("127.0.0.1:0", cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	tr := routing.Tree{Size: 1}
	masterLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	nodes := []sdm.Config{
		{Index: tr.Master(), Tree: tr, Listener: masterLn, DialUp: sdm.DialTCP(ln.Addr().String()), Link: cfg},
		{Index: 0, Tree: tr, DialUp: sdm.DialTCP(masterLn.Addr().String()), Link: cfg,
			Backends: map[int]backend.Backend{0: &newsFirst{events: make(chan backend.Event, 2*burst)}}},
	}
	done := make(chan error, len(nodes))
	for _, nc := range nodes {
		node, err := sdm.New(nc)
		if err != nil {
			t.Fatal(err)
		}
		go func() { done <- node.Run(ctx) }()
	}
	defer func() {
		cancel()
		for range nodes {
			<-done
		}
	}()
	s, err := ln.Accept(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.WaitConnected(ctx, nil); err != nil {
		t.Fatal(err)
	}
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
			if got != burst {
				t.Fatalf("%T, round %d: %d of the %d events sent before the answer had arrived with it", tree, round, got, burst)
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
