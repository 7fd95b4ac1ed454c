package wire

import (
	"net"
	"testing"
	"time"
)

func linkPair(tb testing.TB) (*Link, *Link) {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	defer ln.Close()
	cfg := LinkConfig{Key: testKey(tb, 1)}
	done := make(chan *Link, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			done <- nil
			return
		}
		l, _ := NewLink(c, FromChild(3, 8), cfg)
		done <- l
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		tb.Fatal(err)
	}
	a, err := NewLink(c, ToParent(3, 8), cfg)
	if err != nil {
		tb.Fatal(err)
	}
	b := <-done
	if b == nil {
		tb.Fatal("accept failed")
	}
	tb.Cleanup(func() { a.Close(); b.Close() })
	return a, b
}

// BenchmarkLinkRoundTrip is one command down a link and one reply back.
func BenchmarkLinkRoundTrip(b *testing.B) {
	x, y := linkPair(b)
	go func() {
		for {
			m, err := y.Recv()
			if err != nil {
				return
			}
			m.Kind = KindReply
			m.Groups = []Group{{Ranks: m.Ranks, Body: []byte("answer")}}
			if y.Send(m) != nil {
				return
			}
		}
	}()
	cmd := &Message{Kind: KindCommand, ID: 1, Op: "where", Ranks: All(1024), Timeout: time.Second}
	for b.Loop() {
		if err := x.Send(cmd); err != nil {
			b.Fatal(err)
		}
		if _, err := x.Recv(); err != nil {
			b.Fatal(err)
		}
	}
}
