package client

import (
	"context"
	"fmt"
	"log"
	"net"

	"github.com/sdm-hpc/sdm/wire"
)

// Listener is the session port: the master dials it.
type Listener struct {
	ln  net.Listener
	cfg wire.LinkConfig
	log *log.Logger
}

// Listen binds the session port on addr ("127.0.0.1:0" for any free port
// on this host only). Connections that fail authentication are logged to
// logTo (discarded when nil) and dropped.
func Listen(addr string, cfg wire.LinkConfig, logTo *log.Logger) (*Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("session port: %w", err)
	}
	return &Listener{ln: ln, cfg: cfg, log: logger(logTo)}, nil
}

// Addr is the bound address, to be handed to the master as --host/--port.
func (l *Listener) Addr() *net.TCPAddr { return l.ln.Addr().(*net.TCPAddr) }

// Close stops listening; an established session is not affected.
func (l *Listener) Close() error { return l.ln.Close() }

// Accept waits for the master of a job of size ranks and returns its
// session; the port closes then. Peers that fail the handshake, or
// introduce themselves as anything but that master, are dropped and the
// wait goes on; their handshakes proceed side by side (wire.Gate), so
// that no number of them keeps the master out.
func (l *Listener) Accept(ctx context.Context, size int) (*Session, error) {
	refusals := wire.Refusals{Log: l.log.Printf, What: "session port"}
	gate := wire.NewGate(l.ln, func(conn net.Conn) (*Session, error) {
		return Open(conn, l.cfg, size)
	}, refusals.Refused)
	defer gate.Close()
	s, err := gate.Next(ctx)
	if err != nil && ctx.Err() != nil {
		return nil, fmt.Errorf("waiting for the master to connect to %v: %w", l.Addr(), ctx.Err())
	}
	return s, err
}

// Dial connects to a master that listens (started without --host).
func Dial(ctx context.Context, addr string, cfg wire.LinkConfig, size int) (*Session, error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	return open(conn, cfg, size, true)
}

// Open starts a session on a connection the master made: accepted on the
// session port, or the master's standard input and output
// (--proxy=stdio). It authenticates the master and checks that it leads a
// job of size ranks (any size when size is 0).
func Open(conn net.Conn, cfg wire.LinkConfig, size int) (*Session, error) {
	return open(conn, cfg, size, false)
}

// open starts a session; dialed says that the front end made the
// connection, which makes it the handshake's initiator.
func open(conn net.Conn, cfg wire.LinkConfig, size int, dialed bool) (*Session, error) {
	link, err := wire.NewLink(conn, wire.Ends{Kind: wire.FrontEndLink, Upper: true, Initiator: dialed}, cfg)
	if err != nil {
		return nil, err
	}
	timeout := cfg.HandshakeTimeout
	if timeout <= 0 {
		timeout = wire.DefaultHandshakeTimeout
	}
	hello, err := wire.ReadHello(link, timeout)
	if err == nil && (hello.Index != hello.Size || (size > 0 && hello.Size != size)) {
		err = fmt.Errorf("peer is index %d of a job of %d ranks, not the master of %d", hello.Index, hello.Size, size)
	}
	if err != nil {
		link.Close()
		return nil, err
	}
	return newSession(link, hello), nil
}
