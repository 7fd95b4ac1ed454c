package wire

import (
	"context"
	"fmt"
	"io"
	"net"
	"sync/atomic"
	"time"

	"github.com/hashicorp/yamux"
)

// LinkConfig tunes a Link. The zero value of every field means its default.
type LinkConfig struct {
	// Key is the session key both ends must prove they hold.
	Key Key
	// HandshakeTimeout bounds authentication and the opening of the streams.
	HandshakeTimeout time.Duration
	// MaxFrame bounds one message (DefaultMaxFrame).
	MaxFrame int
	// KeepAlive is how often an idle link is pinged, so that a peer whose
	// host vanished without closing the connection is noticed. A peer that
	// exits or is killed is noticed at once through the closed connection.
	KeepAlive time.Duration
	// Log receives the multiplexer's own complaints (discarded when nil).
	Log io.Writer
}

// DefaultKeepAlive is the ping interval of idle links.
const DefaultKeepAlive = 5 * time.Second

func (c LinkConfig) yamux() *yamux.Config {
	y := yamux.DefaultConfig()
	y.KeepAliveInterval = c.KeepAlive
	if y.KeepAliveInterval <= 0 {
		y.KeepAliveInterval = DefaultKeepAlive
	}
	y.LogOutput = c.Log
	if y.LogOutput == nil {
		y.LogOutput = io.Discard
	}
	y.StreamOpenTimeout = c.HandshakeTimeout
	if y.StreamOpenTimeout <= 0 {
		y.StreamOpenTimeout = DefaultHandshakeTimeout
	}
	return y
}

// Link is an authenticated, encrypted connection between two SDMs (or an
// SDM and the front end). It carries two streams so that a flood of
// program output can never delay a command or its reply: Control for
// commands, replies and events, Output for the program's output.
type Link struct {
	conn    *secureConn
	session *yamux.Session
	streams [2]net.Conn
	control *Codec
	output  *Codec
	closed  atomic.Bool
}

// NewLink runs the handshake on conn as the end e describes and opens the
// link's streams over the protected connection. On error conn is closed.
func NewLink(conn net.Conn, e Ends, cfg LinkConfig) (l *Link, err error) {
	defer func() {
		if err != nil {
			conn.Close()
		}
	}()
	if tcp, ok := conn.(*net.TCPConn); ok {
		tcp.SetNoDelay(true)
	}
	sc, err := Handshake(conn, cfg.Key, e, cfg.HandshakeTimeout)
	if err != nil {
		return nil, err
	}
	var session *yamux.Session
	mux := &coalescedConn{Conn: sc}
	if e.Initiator {
		session, err = yamux.Client(mux, cfg.yamux())
	} else {
		session, err = yamux.Server(mux, cfg.yamux())
	}
	if err != nil {
		return nil, err
	}
	streams, err := openStreams(session, e.Initiator, cfg.yamux().StreamOpenTimeout)
	if err != nil {
		session.Close()
		if sc.Err() != nil {
			err = sc.Err()
		}
		return nil, err
	}
	return &Link{
		conn:    sc,
		session: session,
		streams: streams,
		control: NewCodec(streams[0], cfg.MaxFrame),
		output:  NewCodec(streams[1], cfg.MaxFrame),
	}, nil
}

// openStreams opens (dialer) or accepts (listener) the control and output
// streams, in that order; yamux delivers them in the order they were opened.
func openStreams(s *yamux.Session, dialer bool, timeout time.Duration) ([2]net.Conn, error) {
	var streams [2]net.Conn
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	for i := range streams {
		var st net.Conn
		var err error
		if dialer {
			st, err = s.OpenStream()
		} else {
			st, err = s.AcceptStreamWithContext(ctx)
		}
		if err != nil {
			return streams, fmt.Errorf("open stream %d: %w", i, err)
		}
		streams[i] = st
	}
	return streams, nil
}

// Send writes a message on the control stream. Safe for concurrent use.
func (l *Link) Send(m *Message) error { return l.control.Write(m) }

// Recv reads the next message of the control stream.
func (l *Link) Recv() (*Message, error) { return l.recv(l.control) }

// SendOutput writes a message on the output stream. Safe for concurrent use.
func (l *Link) SendOutput(m *Message) error { return l.output.Write(m) }

// RecvOutput reads the next message of the output stream.
func (l *Link) RecvOutput() (*Message, error) { return l.recv(l.output) }

func (l *Link) recv(c *Codec) (*Message, error) {
	m, err := c.Read()
	switch {
	case err == nil:
	case l.conn.Err() != nil:
		// yamux reports only that its session ended; the reason is ours.
		err = l.conn.Err()
	case l.closed.Load():
		err = net.ErrClosed
	}
	return m, err
}

// Close tears the link down; pending reads return net.ErrClosed.
func (l *Link) Close() error {
	// yamux wakes a reader blocked in a stream the moment the session
	// starts shutting down, but marks the stream closed only after its
	// receive loop has stopped: in between, the reader spins. Expiring the
	// readers' deadlines first sends them away before that window opens.
	l.closed.Store(true)
	for _, st := range l.streams {
		st.SetReadDeadline(time.Unix(1, 0))
	}
	return l.session.Close()
}

// Done is closed when the link is gone, for whatever reason.
func (l *Link) Done() <-chan struct{} { return l.session.CloseChan() }

// Err says why the link broke when bytes on it were altered or forged
// (wrapping ErrTampered), or nil.
func (l *Link) Err() error { return l.conn.Err() }

// RemoteAddr is the peer's address, for messages about it.
func (l *Link) RemoteAddr() net.Addr { return l.conn.RemoteAddr() }
