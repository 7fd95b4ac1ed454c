package sdm_test

import (
	"context"
	"net"
	"strconv"
	"strings"
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

// flood is a backend that, asked anything, writes pieces of output of
// pieceSize bytes each and then answers.
type flood struct {
	events chan backend.Event
	pieces int
}

const pieceSize = 16 << 10

func (b *flood) Do(_ context.Context, _ string, _ []byte, done func([]byte, error)) {
	text := strings.Repeat("x", pieceSize-1) + "\n"
	for range b.pieces {
		b.events <- backend.Event{Op: wire.EventOutput, Body: wire.MustEncode(wire.Output{Stream: "stdout", Text: text})}
	}
	done(nil, nil)
}

func (b *flood) Events() <-chan backend.Event { return b.events }

func (b *flood) Close() error {
	close(b.events)
	return nil
}

// Quit ends the session only after everything the ranks wrote before it
// has reached the front end, through every level of the tree, even when
// the output streams are full as the quit goes down.
func TestQuitDeliversAllOutput(t *testing.T) {
	const size, pieces = 4, 200
	cfg := wire.LinkConfig{Key: testKey(3)}
	ln, err := client.Listen("127.0.0.1:0", cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	tr := routing.Tree{Size: size, Fanout: 2}
	listeners := make([]net.Listener, size+1)
	for id := range listeners {
		if listeners[id], err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	done := make(chan error, size+1)
	for id := 0; id <= size; id++ {
		up := ln.Addr().String()
		if p := tr.Parent(id); p >= 0 {
			up = listeners[p].Addr().String()
		}
		nc := sdm.Config{Index: id, Tree: tr, Listener: listeners[id], DialUp: sdm.DialTCP(up), Link: cfg}
		if id != tr.Master() {
			nc.Backends = map[int]backend.Backend{id: &flood{events: make(chan backend.Event, pieces), pieces: pieces}}
		}
		node, err := sdm.New(nc)
		if err != nil {
			t.Fatal(err)
		}
		go func() { done <- node.Run(ctx) }()
	}
	defer func() {
		cancel()
		for range size + 1 {
			<-done
		}
	}()
	s, err := ln.Accept(ctx, size)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.WaitConnected(ctx, nil); err != nil {
		t.Fatal(err)
	}
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
