package wire

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"strings"
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

// pair runs the responder side of a handshake in the background and the
// initiator side here, over a real loopback TCP connection.
func pair(t *testing.T, dialKey, listenKey Key, dial, listen Ends) (dialErr, listenErr error) {
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
		_, err = Handshake(c, listenKey, listen, time.Second)
		done <- err
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, dialErr = Handshake(c, dialKey, dial, time.Second)
	c.Close()
	return dialErr, <-done
}

func TestHandshakeSameKey(t *testing.T) {
	frontEndDials := Ends{Kind: FrontEndLink, Upper: true, Initiator: true}
	masterAccepts := Ends{Kind: FrontEndLink}
	masterDials := Ends{Kind: FrontEndLink, Initiator: true}
	frontEndAccepts := Ends{Kind: FrontEndLink, Upper: true}
	for name, e := range map[string][2]Ends{
		"tree":                       {ToParent(3, 8), FromChild(3, 8)},
		"front end dials the master": {frontEndDials, masterAccepts},
		"master dials the front end": {masterDials, frontEndAccepts},
	} {
		d, l := pair(t, testKey(t, 1), testKey(t, 1), e[0], e[1])
		if d != nil || l != nil {
			t.Errorf("%s: initiator %v, responder %v", name, d, l)
		}
	}
}

func TestHandshakeWrongKeyRefusedBothWays(t *testing.T) {
	d, l := pair(t, testKey(t, 1), testKey(t, 2), ToParent(3, 8), FromChild(3, 8))
	if !errors.Is(d, ErrAuth) || !errors.Is(l, ErrAuth) {
		t.Fatalf("initiator %v, responder %v: want ErrAuth on both", d, l)
	}
}

// A handshake made for one link fails on any other, with the right key:
// another parent, another job size, a tree port for the front end, or a
// front end where the master is expected to speak first.
func TestHandshakeBindsTheLink(t *testing.T) {
	for name, e := range map[string][2]Ends{
		"another parent":            {ToParent(3, 8), FromChild(5, 8)},
		"another size":              {ToParent(3, 8), FromChild(3, 9)},
		"front end on a tree port":  {{Kind: FrontEndLink, Upper: true, Initiator: true}, FromChild(8, 8)},
		"master on a tree port":     {{Kind: FrontEndLink, Initiator: true}, FromChild(8, 8)},
		"two masters":               {{Kind: FrontEndLink, Initiator: true}, {Kind: FrontEndLink}},
		"two front ends":            {{Kind: FrontEndLink, Upper: true, Initiator: true}, {Kind: FrontEndLink, Upper: true}},
		"child on a front-end port": {ToParent(8, 8), {Kind: FrontEndLink, Upper: true}},
	} {
		d, l := pair(t, testKey(t, 1), testKey(t, 1), e[0], e[1])
		if !errors.Is(d, ErrAuth) || !errors.Is(l, ErrAuth) {
			t.Errorf("%s: initiator %v, responder %v: want ErrAuth on both", name, d, l)
		}
	}
}

// rawPeer talks to a responder by hand and returns what the responder said
// and its verdict. The responder's deadline is what a peer that never
// confirms costs the test, and long enough for a loaded machine's
// scheduling of a synchronous pipe's writes.
func rawPeer(t *testing.T, send func(c net.Conn)) (received []byte, verdict error) {
	t.Helper()
	a, b := net.Pipe()
	done := make(chan error, 1)
	go func() {
		_, err := Handshake(a, testKey(t, 1), FromChild(0, 4), 2*time.Second)
		done <- err
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

func preamble(version uint16) []byte {
	h := make([]byte, preambleSize)
	copy(h, magic[:])
	binary.BigEndian.PutUint16(h[4:], version)
	return h
}

func TestHandshakeRefusals(t *testing.T) {
	// What a version 1 peer sent: magic, version, a 32-byte nonce.
	old := append(preamble(1), bytes.Repeat([]byte{5}, 32)...)
	forged := append(preamble(ProtocolVersion), 0, 48)
	forged = append(forged, bytes.Repeat([]byte{7}, 48)...)
	cases := []struct {
		name string
		send []byte
		want error
	}{
		{"garbage", []byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n......."), ErrNotSDM},
		{"version 1 peer", old, ErrVersion},
		{"other version", preamble(ProtocolVersion + 1), ErrVersion},
		{"forged first message", forged, ErrAuth},
		{"oversized first message", append(preamble(ProtocolVersion), 0xff, 0xff), ErrAuth},
		{"closes early", []byte("SD"), io.ErrUnexpectedEOF},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			received, err := rawPeer(t, func(c net.Conn) {
				c.Write(tc.send)
				c.Close()
			})
			if !errors.Is(err, tc.want) {
				t.Fatalf("responder verdict %v, want %v", err, tc.want)
			}
			// The peer may see our preamble and challenge, and the
			// refusal, and nothing else.
			if len(received) > preambleSize+challengeSize+2 {
				t.Fatalf("refused peer received %d bytes, want at most the %d-byte preamble and challenge and a refusal", len(received), preambleSize+challengeSize)
			}
		})
	}
	t.Run("stalls mid-handshake", func(t *testing.T) {
		start := time.Now()
		_, err := rawPeer(t, func(c net.Conn) {
			c.Write(preamble(ProtocolVersion)[:5]) // and never the rest
		})
		var ne net.Error
		if !errors.As(err, &ne) || !ne.Timeout() {
			t.Fatalf("stalled peer: %v, want a timeout", err)
		}
		if time.Since(start) > 5*time.Second {
			t.Fatal("stalled handshake held the responder far beyond its timeout")
		}
	})
}

// tcpPair returns the two ends of a loopback TCP connection.
func tcpPair(t testing.TB) (net.Conn, net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	a, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	b, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close(); b.Close() })
	return a, b
}

// recorder is a net.Conn that keeps what was written to it.
type recorder struct {
	net.Conn
	sent bytes.Buffer
}

func (r *recorder) Write(p []byte) (int, error) {
	r.sent.Write(p)
	return r.Conn.Write(p)
}

// A first message recorded from a real handshake and replayed is refused
// at once: it is bound to the challenge of its own connection.
func TestHandshakeRefusesReplay(t *testing.T) {
	a, b := tcpPair(t)
	rec := &recorder{Conn: a}
	go Handshake(b, testKey(t, 1), FromChild(0, 4), time.Second)
	if _, err := Handshake(rec, testKey(t, 1), ToParent(0, 4), time.Second); err != nil {
		t.Fatal(err)
	}
	a.Close()
	first := rec.sent.Bytes()[:preambleSize+2+48] // preamble, then the first message
	replay := func(c net.Conn) { c.Write(first) }
	received, err := rawPeer(t, replay)
	if !errors.Is(err, ErrAuth) || !strings.Contains(err.Error(), "first message") {
		t.Fatalf("replayed first message: %v, want ErrAuth for its first message", err)
	}
	// The challenge, fresh for each connection, and the refusal (an
	// empty record) are all the replayer gets: nothing made with the key.
	if len(received) != preambleSize+challengeSize+2 || !bytes.Equal(received[preambleSize+challengeSize:], []byte{0, 0}) {
		t.Fatalf("replayer received %x, want the preamble, the challenge and an empty record", received)
	}
	again, _ := rawPeer(t, replay)
	if len(again) != len(received) || bytes.Equal(again[preambleSize:][:challengeSize], received[preambleSize:][:challengeSize]) {
		t.Fatalf("two connections got %x and %x, want two random challenges of %d bytes", received[preambleSize:], again[preambleSize:], challengeSize)
	}
}

// flipper relays bytes between two pipes and inverts the one at offset
// at of the direction from a to b.
func flipper(a, b net.Conn, at int) {
	go io.Copy(a, b)
	go func() {
		buf := make([]byte, 1)
		for off := 0; ; off++ {
			if _, err := a.Read(buf); err != nil {
				b.Close()
				return
			}
			if off == at {
				buf[0] ^= 0x01
			}
			if _, err := b.Write(buf); err != nil {
				return
			}
		}
	}()
}

// Once established, every byte is protected: a byte changed on the way is
// caught at its record, and the link cannot go on.
func TestSecureConnDetectsTampering(t *testing.T) {
	ini, mid1 := net.Pipe()
	mid2, res := net.Pipe()
	// The initiator's preamble, first message and confirmation come
	// first; the flipped byte is in the first data record after them.
	handshake := preambleSize + 2 + 48 + 2 + tagSize
	flipper(mid1, mid2, handshake+2+3)
	type result struct {
		c   *secureConn
		err error
	}
	done := make(chan result, 1)
	go func() {
		c, err := Handshake(res, testKey(t, 1), FromChild(0, 4), time.Second)
		done <- result{c, err}
	}()
	sender, err := Handshake(ini, testKey(t, 1), ToParent(0, 4), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.err != nil {
		t.Fatal(r.err)
	}
	go sender.Write([]byte("[0-7] gdb shell id"))
	buf := make([]byte, 64)
	n, err := r.c.Read(buf)
	if !errors.Is(err, ErrTampered) || n != 0 {
		t.Fatalf("read %q, %v: want ErrTampered and nothing", buf[:n], err)
	}
	if !errors.Is(r.c.Err(), ErrTampered) {
		t.Fatalf("Err() = %v after a tampered record", r.c.Err())
	}
	if _, err := r.c.Read(buf); !errors.Is(err, ErrTampered) {
		t.Fatalf("read after a tampered record: %v", err)
	}
}

func FuzzHandshake(f *testing.F) {
	f.Add(append(preamble(ProtocolVersion), append([]byte{0, 48}, make([]byte, 48)...)...))
	f.Add(append(preamble(1), make([]byte, 32)...))
	f.Add([]byte("GET / HTTP/1.1\r\n"))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		a, b := net.Pipe()
		defer b.Close()
		go func() {
			b.Write(data)
			io.Copy(io.Discard, b)
		}()
		// Whatever the bytes, without the key the responder must refuse.
		if _, err := Handshake(a, testKey(t, 9), FromChild(0, 4), 50*time.Millisecond); err == nil {
			t.Fatalf("handshake accepted %x", data)
		}
		a.Close()
	})
}

// FuzzRecords feeds an established link arbitrary records: without the
// link's keys nothing decrypts, so every input ends in an error and none
// yields plaintext.
func FuzzRecords(f *testing.F) {
	f.Add([]byte{0, 16, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16})
	f.Add([]byte{0, 3, 1, 2, 3})
	f.Add([]byte{0xff, 0xff})
	f.Fuzz(func(t *testing.T, data []byte) {
		a, b := tcpPair(t)
		go func() {
			Handshake(b, testKey(t, 1), ToParent(0, 4), time.Second)
			b.Write(data)
			b.Close()
		}()
		c, err := Handshake(a, testKey(t, 1), FromChild(0, 4), time.Second)
		if err != nil {
			t.Fatalf("handshake: %v", err)
		}
		buf := make([]byte, 1<<16)
		if n, err := c.Read(buf); err == nil {
			t.Fatalf("%x read as %q", data, buf[:n])
		}
	})
}

// A responder that closes the connection without refusing (it let it go
// to make room for others) is not taken for a refusal: the initiator may
// try again, where a refusal is final.
func TestHandshakeClosedIsNotRefused(t *testing.T) {
	a, b := tcpPair(t)
	go func() {
		b.Write(append(preamble(ProtocolVersion), make([]byte, challengeSize)...))
		readPreamble(b)
		readRecord(b, handshakeRecordLimit)
		b.Close()
	}()
	_, err := Handshake(a, testKey(t, 1), ToParent(0, 4), 2*time.Second)
	if err == nil || errors.Is(err, ErrAuth) {
		t.Fatalf("closed after our first message: %v, want an error that is not ErrAuth", err)
	}
}
