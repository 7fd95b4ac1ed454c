package wire

import (
	"net"
	"testing"
	"time"
)

// linkPair is a TCP link's two ends on the loopback.
func linkPair(tb testing.TB) (*Link, *Link) {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	cfg := LinkConfig{Key: testKey(tb, 1)}
	return pairOn(tb, ln, func(c net.Conn, dialer bool) (*Link, error) {
		if dialer {
			return NewLink(c, ToParent(3, 8), cfg)
		}
		return NewLink(c, FromChild(3, 8), cfg)
	})
}

// pairOn dials ln once and makes a link's two ends of the connection
// with open, the dialer's first; it closes ln.
func pairOn(tb testing.TB, ln net.Listener, open func(c net.Conn, dialer bool) (*Link, error)) (*Link, *Link) {
	tb.Helper()
	defer ln.Close()
	done := make(chan *Link, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			done <- nil
			return
		}
		l, err := open(c, false)
		if err != nil {
			tb.Log(err)
		}
		done <- l
	}()
	c, err := net.Dial(ln.Addr().Network(), ln.Addr().String())
	if err != nil {
		tb.Fatal(err)
	}
	a, err := open(c, true)
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
