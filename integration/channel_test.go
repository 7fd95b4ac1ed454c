package integration

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sdm-hpc/sdm/client"
	"github.com/sdm-hpc/sdm/routing"
	"github.com/sdm-hpc/sdm/testkit/testenv"
	"github.com/sdm-hpc/sdm/wire"
)

// relay is a man in the middle without the key: it accepts one connection
// and joins it to another, keeping every byte it passes, and can change
// one on the way.
type relay struct {
	ln       net.Listener
	mu       sync.Mutex
	seen     [2]bytes.Buffer // what the dialer sent, what the target sent
	flip     atomic.Bool     // change a byte of the target's next chunk
	flipped  chan struct{}
	finished chan struct{} // both directions closed
}

// newRelay listens on the loopback; the first connection it accepts is
// joined to what target returns.
func newRelay(t *testing.T, target func() (net.Conn, error)) *relay {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &relay{ln: ln, flipped: make(chan struct{}), finished: make(chan struct{})}
	t.Cleanup(func() { ln.Close() })
	go func() {
		a, err := ln.Accept()
		if err != nil {
			return
		}
		b, err := target()
		if err != nil {
			a.Close()
			return
		}
		t.Cleanup(func() { a.Close(); b.Close() })
		var wg sync.WaitGroup
		wg.Add(2)
		go func() { defer wg.Done(); r.pass(a, b, 0) }()
		go func() { defer wg.Done(); r.pass(b, a, 1) }()
		wg.Wait()
		close(r.finished)
	}()
	return r
}

func (r *relay) port() int { return r.ln.Addr().(*net.TCPAddr).Port }

// pass copies from src to dst, keeping a copy in seen[dir].
func (r *relay) pass(src, dst net.Conn, dir int) {
	defer dst.Close()
	defer src.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if dir == 1 && r.flip.CompareAndSwap(true, false) {
				// The last byte read ends a record (its tag) far more
				// often than the middle, which may be the next record's
				// length: a changed length leaves the reader waiting for
				// bytes that never come, until the link is closed.
				buf[n-1] ^= 0x20
				close(r.flipped)
			}
			r.mu.Lock()
			r.seen[dir].Write(buf[:n])
			r.mu.Unlock()
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// bytesSeen is everything the relay passed, both ways.
func (r *relay) bytesSeen() []byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append(append([]byte{}, r.seen[0].Bytes()...), r.seen[1].Bytes()...)
}

// waitFinished waits until both sides hung up on the relay.
func (r *relay) waitFinished(t *testing.T, within time.Duration) {
	t.Helper()
	select {
	case <-r.finished:
	case <-time.After(within):
		t.Fatalf("the relayed connections were still open after %v", within)
	}
}

// dialRetry dials addr until it listens, for processes just started.
func dialRetry(t *testing.T, addr func() (string, error)) net.Conn {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		a, err := addr()
		if err == nil {
			var c net.Conn
			if c, err = net.Dial("tcp", a); err == nil {
				return c
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("nothing listens within 20 s: %v", err)
		}
		time.Sleep(10 * time.Millisecond) // polling a port another process opens
	}
}

// greeting is the most a port says to a peer without the key: its
// 6-byte preamble (magic, version), a 16-byte random challenge, and an
// empty record that refuses the peer's first message.
const greeting = 6 + 16 + 2

// The attack on the HMAC handshake of protocol 1: a master listening for
// its front end proved itself first, so a peer without the key relayed its
// proof to a listener of the same session (the master's own child port),
// relayed the answer back, and was taken for the front end. Now the end
// that accepts a connection never speaks past its preamble and challenge
// before the peer
// proved it holds the key for that very link: the relay gets nothing
// through, the master drops it, and the real front end is served after it.
func TestReflectionAttackFails(t *testing.T) {
	const n = 4
	s := newSession(t, n)
	port := freePort(t)
	master := start(t, testenv.Command(t, sdmBin, "--master", "--port="+strconv.Itoa(port),
		"--routing_file="+s.routes, "--key-file="+s.keyFile))
	args := s.serverArgs()
	for i := 0; i < n; i++ {
		s.startServer(args, i)
	}
	sessionPort := dialRetry(t, func() (string, error) { return net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), nil })
	childPort := dialRetry(t, func() (string, error) {
		e, err := routing.ReadMaster(s.routes, n)
		return e.Addr(), err
	})
	var fromMaster bytes.Buffer
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		io.Copy(io.MultiWriter(childPort, &fromMaster), sessionPort)
		childPort.Close()
	}()
	go func() { defer wg.Done(); io.Copy(sessionPort, childPort); sessionPort.Close() }()
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("the master and its child port still talk through the relay after 20 s")
	}
	if fromMaster.Len() > greeting {
		t.Errorf("the session port sent %d bytes to a peer without the key, want only the %d-byte preamble and challenge", fromMaster.Len(), greeting)
	}
	master.lines(t, 1, "session port: dropped a connection from")

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cs, err := client.Dial(ctx, net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), s.link, n)
	if err != nil {
		t.Fatalf("the front end after the relay: %v", err)
	}
	defer cs.Close()
	if err := cs.WaitConnected(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if groups := command(t, cs.Command, wire.All(n), wire.OpStatus, nil); !okRanks(groups).Equal(wire.All(n)) {
		t.Fatalf("status: %s", describe(groups))
	}
}

// A master that dials its front end through a relay that sends it to the
// master's own child port instead (a rewritten address): the child port
// refuses a handshake made for the front-end link, and the master stops
// with the reason.
func TestMasterRedirectedToATreePortIsRefused(t *testing.T) {
	const n = 2
	s := newSession(t, n)
	r := newRelay(t, func() (net.Conn, error) {
		e, err := routing.ReadMaster(s.routes, n)
		if err != nil {
			return nil, err
		}
		return net.Dial("tcp", e.Addr())
	})
	master := start(t, testenv.Command(t, sdmBin, "--master", "--host=127.0.0.1", "--port="+strconv.Itoa(r.port()),
		"--routing_file="+s.routes, "--key-file="+s.keyFile))
	master.lines(t, 1, "tree port: dropped a connection from")
	master.lines(t, 1, "the front end refused us")
	r.waitFinished(t, 20*time.Second)
}

// A relay on the path between the master and the front end sees no
// command, no answer and no program name: every byte after the handshake
// is encrypted.
func TestRelayWithoutKeySeesNoPlaintext(t *testing.T) {
	const n = 4
	s := newSession(t, n)
	r := newRelay(t, func() (net.Conn, error) { return net.Dial("tcp", s.ln.Addr().String()) })
	start(t, testenv.Command(t, sdmBin, "--master", "--host=127.0.0.1", "--port="+strconv.Itoa(r.port()),
		"--routing_file="+s.routes, "--key-file="+s.keyFile))
	args := s.serverArgs()
	for i := 0; i < n; i++ {
		s.startServer(args, i)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs := s.join(ctx, n)
	command(t, cs.Command, wire.All(n), wire.OpStart, wire.MustEncode(wire.Start{Program: "ring", Args: []string{"secret-argument"}}))
	shell := wire.MustEncode(wire.Text{Text: "shell id > /tmp/owned"})
	cs.Command(ctx, wire.All(n), wire.OpRaw, shell, 10*time.Second)
	command(t, cs.Command, wire.All(n), wire.OpWhere, nil)
	if _, err := cs.Quit(ctx, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	r.waitFinished(t, 20*time.Second)
	seen := r.bytesSeen()
	plain, _ := wire.Encode(&wire.Message{Kind: wire.KindCommand, ID: 2, Op: wire.OpRaw, Ranks: wire.All(n), Timeout: time.Second, Body: shell})
	for _, text := range []string{"shell id > /tmp/owned", "secret-argument", "ring.c", "where", "MPI_Sendrecv"} {
		if bytes.Contains(seen, []byte(text)) {
			t.Errorf("the relay saw %q in clear", text)
		}
	}
	if !bytes.Contains(plain, []byte("shell id > /tmp/owned")) {
		t.Fatal("the check is blind: an unencrypted command would not show its text")
	}
	if len(seen) < 1000 {
		t.Fatalf("the relay passed only %d bytes: the session did not go through it", len(seen))
	}
}

// A relay that changes one byte of an established link: the master
// notices at that record, drops the link with the reason in its log, and
// the front end learns the session is over; the changed command runs
// nowhere.
func TestTamperedLinkIsDropped(t *testing.T) {
	const n = 4
	s := newSession(t, n)
	r := newRelay(t, func() (net.Conn, error) { return net.Dial("tcp", s.ln.Addr().String()) })
	master := start(t, testenv.Command(t, sdmBin, "--master", "--host=127.0.0.1", "--port="+strconv.Itoa(r.port()),
		"--routing_file="+s.routes, "--key-file="+s.keyFile))
	args := s.serverArgs()
	var servers []*proc
	for i := 0; i < n; i++ {
		servers = append(servers, s.startServer(args, i))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs := s.join(ctx, n)
	r.flip.Store(true)
	groups, err := cs.Command(ctx, wire.All(n), wire.OpStart, wire.MustEncode(wire.Start{Program: "ring"}), 10*time.Second)
	<-r.flipped
	if err == nil && okRanks(groups).Equal(wire.All(n)) {
		t.Fatalf("a changed command was answered by every rank: %s", describe(groups))
	}
	master.lines(t, 1, "link integrity check failed")
	master.lines(t, 1, "altered or forged on the way")
	for _, p := range append(servers, master) {
		select {
		case <-p.done:
		case <-time.After(20 * time.Second):
			t.Fatalf("%v still runs 20 s after its link was tampered with", p.cmd.Args)
		}
	}
	select {
	case <-cs.Done():
	case <-time.After(20 * time.Second):
		t.Fatal("the front end's session is still open")
	}
}

// A peer of protocol 1 is refused at the preamble, both ways, with the
// versions named: a version 1 child at a server's port, and a master whose
// front end speaks version 1.
func TestOldProtocolPeerIsRefused(t *testing.T) {
	const n = 4 // rank 0 has a child, so it listens (one node per rank)
	s := newSession(t, n)
	s.tree = "ranks"
	oldHello := make([]byte, 38)
	copy(oldHello, "SDM\x00")
	binary.BigEndian.PutUint16(oldHello[4:], 1)

	// A version 1 front end: it sends its hello and waits.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		c.Write(oldHello)
		io.Copy(io.Discard, c)
	}()
	master := start(t, testenv.Command(t, sdmBin, "--master", "--host=127.0.0.1", "--port="+strconv.Itoa(ln.Addr().(*net.TCPAddr).Port),
		"--routing_file="+s.routes, "--key-file="+s.keyFile))
	master.lines(t, 1, fmt.Sprintf("peer speaks version 1, we speak %d", wire.ProtocolVersion))

	// A version 1 child at rank 0's port.
	server := s.startServer(s.serverArgs(), 0)
	table, err := routing.ReadFile(s.routes)
	if err != nil {
		t.Fatal(err)
	}
	c := dialRetry(t, func() (string, error) { return table.Entries[0].Addr(), nil })
	defer c.Close()
	c.Write(oldHello)
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	got, err := io.ReadAll(c)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatal("rank 0 kept a version 1 peer's connection open")
	}
	if len(got) > greeting {
		t.Errorf("rank 0 sent %d bytes to a version 1 peer, want only its preamble and challenge", len(got))
	}
	server.lines(t, 1, fmt.Sprintf("peer speaks version 1, we speak %d", wire.ProtocolVersion))
}
