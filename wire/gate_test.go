package wire

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Past its bound, Pending lets the connection that has waited longest go,
// and a released one no longer counts.
func TestPendingLetsTheOldestGo(t *testing.T) {
	p := Pending{Max: 2}
	var theirs []net.Conn
	var releases []func()
	for range 3 {
		mine, other := net.Pipe()
		defer mine.Close()
		defer other.Close()
		theirs = append(theirs, other)
		releases = append(releases, p.Add(mine))
	}
	other := theirs[0]
	other.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := other.Read(make([]byte, 1)); !errors.Is(err, io.EOF) {
		t.Fatalf("the oldest connection was not let go: %v", err)
	}
	releases[1]()
	mine, fourth := net.Pipe()
	defer mine.Close()
	defer fourth.Close()
	p.Add(mine)
	// Released, the second no longer counts: the third stays.
	theirs[2].SetReadDeadline(time.Now().Add(50 * time.Millisecond))
	if _, err := theirs[2].Read(make([]byte, 1)); !isTimeout(err) {
		t.Fatalf("the third connection was let go though the second was released: %v", err)
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// A flood of refusals is told in a line at first and then one per while
// with the count of those it stands for; none is left untold.
func TestRefusalsAreCounted(t *testing.T) {
	lines := make(chan string, 10)
	r := Refusals{What: "session port", Every: 50 * time.Millisecond, Log: func(format string, args ...any) {
		lines <- fmt.Sprintf(format, args...)
	}}
	peer := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 4242}
	for range 2000 {
		r.Refused(peer, errors.New("read preamble: i/o timeout"))
	}
	first := <-lines
	if !strings.Contains(first, "dropped a connection from 127.0.0.1:4242: read preamble") {
		t.Fatalf("first line: %q", first)
	}
	select {
	case second := <-lines:
		if !strings.Contains(second, "dropped 1999 connections") || !strings.Contains(second, "127.0.0.1:4242") {
			t.Fatalf("second line: %q", second)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the refusals after the first were never told")
	}
	select {
	case extra := <-lines:
		t.Fatalf("a line for no refusal: %q", extra)
	default:
	}
}

// A gate admits the peer that completes its handshake while others
// stall in theirs, and lets go of those when it closes.
func TestGateAdmitsPastStalledPeers(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refused := make(chan error, 100)
	// The handshake: one byte, 'k' for a key holder.
	gate := NewGate(ln, func(c net.Conn) (net.Conn, error) {
		b := make([]byte, 1)
		if _, err := io.ReadFull(c, b); err != nil {
			c.Close()
			return nil, err
		}
		if b[0] != 'k' {
			c.Close()
			return nil, errors.New("no key")
		}
		return c, nil
	}, func(_ net.Addr, err error) { refused <- err })
	defer gate.Close()
	var stalled []net.Conn
	for range 20 {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		stalled = append(stalled, c)
	}
	owner, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer owner.Close()
	owner.Write([]byte{'k'})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	got, err := gate.Next(ctx)
	if err != nil {
		t.Fatalf("the key holder waits behind stalled peers: %v", err)
	}
	if got.RemoteAddr().String() != owner.LocalAddr().String() {
		t.Fatalf("admitted %v, the key holder is %v", got.RemoteAddr(), owner.LocalAddr())
	}
	got.Close()
	gate.Close()
	for i, c := range stalled {
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		if _, err := c.Read(make([]byte, 1)); !errors.Is(err, io.EOF) && !errors.Is(err, syscall.ECONNRESET) {
			t.Fatalf("stalled peer %d was not let go when the gate closed: %v", i, err)
		}
	}
	if _, err := gate.Next(context.Background()); err == nil || !strings.Contains(err.Error(), "no longer accepting") {
		t.Fatalf("a closed gate: %v", err)
	}
}
