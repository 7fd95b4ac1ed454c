package client_test

import (
	"context"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sdm-hpc/sdm/client"
	"github.com/sdm-hpc/sdm/wire"
)

// master plays a one-rank tree's master on a link to a session, so that
// a test decides what goes down each stream and when.
type master struct {
	t       *testing.T
	link    *wire.Link
	session *client.Session
	busy    sync.WaitGroup // what the test runs as the master
}

func startMaster(t *testing.T) *master {
	t.Helper()
	cfg := wire.LinkConfig{Key: [32]byte{9}}
	ln, err := client.Listen("127.0.0.1:0", cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	dialed := make(chan *wire.Link, 1)
	go func() {
		conn, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Error(err)
			dialed <- nil
			return
		}
		link, err := wire.NewLink(conn, wire.Ends{Kind: wire.FrontEndLink, Initiator: true}, cfg)
		if err == nil {
			err = wire.SendHello(link, wire.Hello{Index: 1, Size: 1})
		}
		if err == nil {
			err = link.Send(&wire.Message{Kind: wire.KindEvent, Op: wire.EventConnected, Groups: []wire.Group{{Ranks: wire.Single(0)}}})
		}
		if err != nil {
			t.Error(err)
		}
		dialed <- link
	}()
	s, err := ln.Accept(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	m := &master{t: t, link: <-dialed, session: s}
	if m.link == nil {
		t.FailNow()
	}
	t.Cleanup(func() {
		// A write that the link's end interrupts fails although its bytes
		// went out: the master's work ends before the link does, unless
		// the test failed and it may wait for a reader that is gone.
		if t.Failed() {
			m.link.Close()
		}
		m.busy.Wait()
		m.link.Close()
		s.Close()
	})
	if err := s.WaitConnected(ctx, nil); err != nil {
		t.Fatal(err)
	}
	return m
}

// answer reads the next command and answers it after sending news, its
// stop, on the control stream; the stop's mark is for the test to send.
func (m *master) answer() {
	cmd, err := m.link.Recv()
	if err != nil {
		m.t.Error(err)
		return
	}
	stop := &wire.Message{Kind: wire.KindEvent, Op: wire.EventStopped, Groups: []wire.Group{{Ranks: wire.Single(0)}}}
	reply := &wire.Message{Kind: wire.KindReply, ID: cmd.ID, Op: cmd.Op, Groups: []wire.Group{{Ranks: wire.Single(0)}}}
	for _, msg := range []*wire.Message{stop, reply} {
		if err := m.link.Send(msg); err != nil {
			m.t.Error(err)
		}
	}
}

func (m *master) send(op string, body []byte) {
	if err := m.link.SendOutput(&wire.Message{Kind: wire.KindEvent, Op: op, Groups: []wire.Group{{Ranks: wire.Single(0), Body: body}}}); err != nil {
		m.t.Error(err)
	}
}

// arrived lists the ops of the events queued now, without waiting.
func arrived(s *client.Session) []string {
	now, stop := context.WithCancel(context.Background())
	stop()
	var ops []string
	for {
		ev, err := s.NextEvent(now)
		if err != nil {
			return ops
		}
		ops = append(ops, ev.Op)
	}
}

// An answer waits for the mark of the stop sent before it, however late
// the mark is on a loaded machine: once status is back, the stop it
// reports can be read.
func TestAnswerWaitsForLateMark(t *testing.T) {
	m := startMaster(t)
	m.busy.Go(func() {
		m.answer()
		// The mark comes well after the answer, as under load; this delay
		// is what is tested, nothing waits on it.
		time.Sleep(300 * time.Millisecond)
		m.send(wire.EventOutputMark, nil)
	})
	command(t, m.session, wire.Single(0), wire.OpStatus, nil)
	if got := strings.Join(arrived(m.session), " "); got != "connected stopped" {
		t.Fatalf("events queued when the answer came: %q, want the stop", got)
	}
}

// An answer does not wait for a mark stuck behind output that the front
// end has not read: the stop then follows that output.
func TestAnswerGoesFirstBehindUnreadOutput(t *testing.T) {
	m := startMaster(t)
	const pieces = 200 // 3 MB, more than the session holds unread
	text := wire.MustEncode(wire.Output{Stream: "stdout", Text: strings.Repeat("y", 16<<10)})
	m.busy.Go(func() {
		for range pieces {
			m.send(wire.EventOutput, text)
		}
		m.send(wire.EventOutputMark, nil)
	})
	m.busy.Go(m.answer)
	start := time.Now()
	command(t, m.session, wire.Single(0), wire.OpStatus, nil)
	// A generous bound: were the stalled stream not noticed, the answer
	// would wait for markWait (5 s).
	if took := time.Since(start); took > 3*time.Second {
		t.Errorf("the answer waited %v for a mark stuck behind unread output", took)
	}
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	outputs := 0
	for {
		ev, err := m.session.NextEvent(ctx)
		if err != nil {
			t.Fatalf("after %d pieces of output: %v", outputs, err)
		}
		switch ev.Op {
		case wire.EventOutput:
			outputs++
		case wire.EventStopped:
			if outputs != pieces {
				t.Fatalf("the stop came after %d of the %d pieces of output before it", outputs, pieces)
			}
			return
		}
	}
}
