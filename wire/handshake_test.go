package wire

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"testing"
	"time"
)

func testKey(t testing.TB, b byte) Key {
	t.Helper()
	var k Key
	for i := range k {
		k[i] = b
	}
	return k
}

// pair runs the listener side of a handshake in the background and the
// dialer side here, over a real loopback TCP connection.
func pair(t *testing.T, dialKey, listenKey Key) (dialErr, listenErr error) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	done := make(chan error, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			done <- err
			return
		}
		defer c.Close()
		done <- Handshake(c, listenKey, false, time.Second)
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	dialErr = Handshake(c, dialKey, true, time.Second)
	c.Close()
	return dialErr, <-done
}

func TestHandshakeSameKey(t *testing.T) {
	d, l := pair(t, testKey(t, 1), testKey(t, 1))
	if d != nil || l != nil {
		t.Fatalf("dialer %v, listener %v", d, l)
	}
}

func TestHandshakeWrongKeyRefusedBothWays(t *testing.T) {
	d, l := pair(t, testKey(t, 1), testKey(t, 2))
	if !errors.Is(d, ErrAuth) || !errors.Is(l, ErrAuth) {
		t.Fatalf("dialer %v, listener %v: want ErrAuth on both", d, l)
	}
}

// rawPeer talks to a listener by hand and returns what the listener said
// and the listener's verdict.
func rawPeer(t *testing.T, send func(c net.Conn)) (received []byte, verdict error) {
	t.Helper()
	a, b := net.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- Handshake(a, testKey(t, 1), false, 300*time.Millisecond)
		a.Close()
	}()
	got := make(chan []byte, 1)
	go func() {
		data, _ := io.ReadAll(b)
		got <- data
	}()
	send(b)
	verdict = <-done
	b.Close()
	return <-got, verdict
}

func TestHandshakeRefusals(t *testing.T) {
	hello := func(version uint16) []byte {
		h := make([]byte, helloSize)
		copy(h, magic[:])
		binary.BigEndian.PutUint16(h[4:], version)
		return h
	}
	cases := []struct {
		name string
		send []byte
		want error
	}{
		{"garbage", []byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n......."), ErrNotSDM},
		{"other version", hello(ProtocolVersion + 1), ErrVersion},
		{"wrong proof", append(hello(ProtocolVersion), bytes.Repeat([]byte{7}, macSize)...), ErrAuth},
		{"closes early", []byte("SD"), io.ErrUnexpectedEOF},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			received, err := rawPeer(t, func(c net.Conn) {
				c.Write(tc.send)
				c.Close()
			})
			if !errors.Is(err, tc.want) {
				t.Fatalf("listener verdict %v, want %v", err, tc.want)
			}
			// The peer may see our hello (magic, version, random nonce) and
			// nothing after it: no proof, no data.
			if len(received) > helloSize {
				t.Fatalf("refused peer received %d bytes, want at most the %d-byte hello", len(received), helloSize)
			}
		})
	}
	t.Run("stalls mid-handshake", func(t *testing.T) {
		start := time.Now()
		_, err := rawPeer(t, func(c net.Conn) {
			c.Write(hello(ProtocolVersion)[:10]) // and never the rest
		})
		var ne net.Error
		if !errors.As(err, &ne) || !ne.Timeout() {
			t.Fatalf("stalled peer: %v, want a timeout", err)
		}
		if time.Since(start) > 5*time.Second {
			t.Fatal("stalled handshake held the listener far beyond its timeout")
		}
	})
}

func FuzzHandshake(f *testing.F) {
	h := make([]byte, helloSize)
	copy(h, magic[:])
	binary.BigEndian.PutUint16(h[4:], ProtocolVersion)
	f.Add(append(h, make([]byte, macSize)...))
	f.Add([]byte("GET / HTTP/1.1\r\n"))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		a, b := net.Pipe()
		defer b.Close()
		go func() {
			b.Write(data)
			io.Copy(io.Discard, b)
		}()
		// Whatever the bytes, without the key the listener must refuse.
		if err := Handshake(a, testKey(t, 9), false, 50*time.Millisecond); err == nil {
			t.Fatalf("handshake accepted %x", data)
		}
		a.Close()
	})
}
