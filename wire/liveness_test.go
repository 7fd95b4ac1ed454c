package wire

import (
	"errors"
	"net"
	"sync/atomic"
	"testing"
	"time"
)

// Links ping on demand: idle, a peer is never silent; awaited, the link
// expects a word until the peer answers a ping (both ends read their
// control streams, as nodes always do).
func TestLinksPingOnDemand(t *testing.T) {
	for name, pair := range map[string]func(testing.TB) (*Link, *Link){"local": localPair, "tcp": linkPair} {
		t.Run(name, func(t *testing.T) {
			a, b := pair(t)
			for _, l := range []*Link{a, b} {
				go func() {
					for {
						if _, err := l.Recv(); err != nil {
							return
						}
					}
				}()
			}
			if a.Silence() != 0 || a.Expect(false) {
				t.Fatalf("an idle link: silence %v", a.Silence())
			}
			if !a.Expect(true) {
				t.Fatal("Expect(true) expects nothing")
			}
			// Awaited and not answered yet: still expected when no longer awaited.
			if !a.Expect(false) {
				t.Fatal("an answer that never came stopped being expected")
			}
			a.Ping()
			deadline := time.Now().Add(10 * time.Second)
			for a.Expect(false) {
				if time.Now().After(deadline) {
					t.Fatal("the peer's answer to a ping never cleared the expectation")
				}
				waitFor := time.NewTimer(time.Millisecond) // polling a flag that no event announces
				<-waitFor.C
			}
			if a.Silence() != 0 {
				t.Fatalf("silence %v once nothing is expected", a.Silence())
			}
		})
	}
}

// frozenConn stops reading once frozen, as a peer whose host vanished.
type frozenConn struct {
	net.Conn
	frozen *atomic.Bool
	done   chan struct{}
}

func (c frozenConn) Read(p []byte) (int, error) {
	if c.frozen.Load() {
		<-c.done
		return 0, net.ErrClosed
	}
	return c.Conn.Read(p)
}

// An idle TCP link stays up while its peer answers the watchdog's pings,
// and is dropped as silent once the peer says nothing for the limit.
func TestTCPLinkWatchdog(t *testing.T) {
	const limit = 400 * time.Millisecond
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var frozen atomic.Bool
	done := make(chan struct{})
	defer close(done)
	cfg := LinkConfig{Key: testKey(t, 1), Silence: limit}
	// The frozen end gives up much later: the test is of the other one.
	patient := LinkConfig{Key: testKey(t, 1), Silence: time.Minute}
	a, b := pairOn(t, ln, func(c net.Conn, dialer bool) (*Link, error) {
		if dialer {
			return NewLink(c, ToParent(3, 8), cfg)
		}
		return NewLink(frozenConn{Conn: c, frozen: &frozen, done: done}, FromChild(3, 8), patient)
	})
	ended := make(chan error, 1)
	go func() {
		for {
			if _, err := a.Recv(); err != nil {
				ended <- err
				return
			}
		}
	}()
	go func() {
		for {
			if _, err := b.Recv(); err != nil {
				return
			}
		}
	}()
	// Three limits without a message but the pings.
	select {
	case err := <-ended:
		t.Fatalf("an idle link whose peer answers was dropped: %v", err)
	case <-time.After(3 * limit):
	}
	frozen.Store(true)
	select {
	case err := <-ended:
		if !errors.Is(err, ErrSilent) {
			t.Fatalf("a link whose peer stopped reading ended with %v, want ErrSilent", err)
		}
	case <-time.After(10 * limit):
		t.Fatal("a link whose peer stopped reading was never dropped")
	}
}
