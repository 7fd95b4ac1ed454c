package wire

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
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
	// KeepAlive is how often each end of a TCP link pings an idle peer
	// (a quarter of Silence), so that a peer whose host vanished is
	// dropped once silent for Silence. While an answer is due from the
	// peer, the node that awaits it pings it every second (Expect).
	KeepAlive time.Duration
	// Silence is how long a link may go without a word from its peer
	// before it is dropped (DefaultSilence): the peer's host is gone, or
	// the peer has been stopped that long. A peer that exits or is killed
	// is noticed at once through the closed connection.
	Silence time.Duration
	// Log receives the multiplexer's own complaints (discarded when nil).
	Log io.Writer
}

// DefaultSilence is how long a link stays without a word from its peer.
// A server that is alive answers a ping within milliseconds, but one may
// be stopped for a while and come back: job control, a node that swaps,
// an executable paged in from a parallel file system that hangs for tens
// of seconds. Commands do not wait on a silent peer (the tree node stops
// waiting for it after a few seconds), so dropping the link early would
// buy nothing but a loss and a rejoin; dropping it at all lets a peer
// whose host vanished be reported lost, and lets the servers below it,
// which drop it too, try to rejoin and then end instead of staying
// orphaned.
const DefaultSilence = time.Minute

// keepAlive is the interval at which cfg's TCP links ping an idle peer.
func (c LinkConfig) keepAlive() time.Duration {
	if c.KeepAlive > 0 {
		return c.KeepAlive
	}
	return c.SilenceLimit() / 4
}

// SilenceLimit is how long a link of this configuration stays silent
// before it is dropped.
func (c LinkConfig) SilenceLimit() time.Duration {
	if c.Silence > 0 {
		return c.Silence
	}
	return DefaultSilence
}

func (c LinkConfig) yamux() *yamux.Config {
	y := yamux.DefaultConfig()
	// The link pings and judges silence itself (watch): yamux's keepalive
	// would take a process that was stopped itself for a peer gone quiet
	// the moment it runs again, and drop every one of its links.
	y.EnableKeepAlive = false
	// A write that cannot go out for this long will not: the peer stopped
	// reading.
	y.ConnectionWriteTimeout = c.SilenceLimit()
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
	conn carrier
	// session multiplexes the streams over conn; nil on a local link,
	// whose streams are pipes of their own (NewLocalLink).
	session *yamux.Session
	streams [2]net.Conn
	control *Codec
	output  *Codec
	closed  atomic.Bool
	done    chan struct{} // a local link's Done
	shut    sync.Once
	live    liveness
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
	return newLink(sc, &sc.heard, e.Initiator, cfg)
}

// carrier is what a link's control stream runs over: a secureConn, or
// a localConn between two processes of one host.
type carrier interface {
	net.Conn
	// Err says why the carrier cannot go on (ErrTampered), or nil.
	Err() error
}

// newLink opens the link's two streams over c, multiplexed by yamux, c's
// last arrival recorded in heard. On error c is closed.
func newLink(c carrier, heard *atomic.Int64, initiator bool, cfg LinkConfig) (*Link, error) {
	var session *yamux.Session
	var err error
	mux := &coalescedConn{Conn: c}
	if initiator {
		session, err = yamux.Client(mux, cfg.yamux())
	} else {
		session, err = yamux.Server(mux, cfg.yamux())
	}
	if err != nil {
		c.Close()
		return nil, err
	}
	streams, err := openStreams(session, initiator, cfg.yamux().StreamOpenTimeout)
	if err != nil {
		session.Close()
		if c.Err() != nil {
			err = c.Err()
		}
		return nil, err
	}
	l := &Link{
		conn:    c,
		session: session,
		streams: streams,
		control: NewCodec(streams[0], cfg.MaxFrame),
		output:  NewCodec(streams[1], cfg.MaxFrame),
		live:    liveness{heard: heard, interval: cfg.keepAlive()},
	}
	go l.watch(cfg.SilenceLimit())
	return l, nil
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
// A write that fails on the way (the peer did not read for
// LinkConfig.Silence) closes the link: the stream is cut mid-frame.
func (l *Link) Send(m *Message) error { return l.write(l.control, m) }

// Recv reads the next message of the control stream.
func (l *Link) Recv() (*Message, error) { return l.recv(l.control) }

// SendOutput writes a message on the output stream, as Send does.
func (l *Link) SendOutput(m *Message) error { return l.write(l.output, m) }

func (l *Link) write(c *Codec, m *Message) error {
	err := c.Write(m)
	var cut writeError
	if errors.As(err, &cut) {
		l.Close()
	}
	return err
}

// RecvOutput reads the next message of the output stream.
func (l *Link) RecvOutput() (*Message, error) { return l.recv(l.output) }

func (l *Link) recv(c *Codec) (*Message, error) {
	for {
		m, err := c.Read()
		switch {
		case err == nil:
		case l.Err() != nil:
			// yamux reports only that its session ended; the reason is ours.
			err = l.Err()
		case l.closed.Load():
			err = net.ErrClosed
		}
		if l.session != nil {
			return m, err
		}
		// A local link: a broken stream is a broken link, as a yamux
		// session ends with its connection; pings are the link's own.
		switch {
		case err != nil:
			l.close()
		case m.Kind == KindPing:
			l.write(l.control, &Message{Kind: KindPong})
			continue
		case m.Kind == KindPong:
			continue
		}
		return m, err
	}
}

// Close tears the link down; pending reads return net.ErrClosed.
func (l *Link) Close() error {
	// yamux wakes a reader blocked in a stream the moment the session
	// starts shutting down, but marks the stream closed only after its
	// receive loop has stopped: in between, the reader spins. Expiring the
	// readers' deadlines first sends them away before that window opens.
	l.closed.Store(true)
	if l.session == nil {
		l.close()
		return nil
	}
	for _, st := range l.streams {
		st.SetReadDeadline(time.Unix(1, 0))
	}
	return l.session.Close()
}

// close ends a local link: its pipes and Done.
func (l *Link) close() {
	l.shut.Do(func() {
		close(l.done)
		for _, st := range l.streams {
			st.Close()
		}
	})
}

// Done is closed when the link is gone, for whatever reason.
func (l *Link) Done() <-chan struct{} {
	if l.session == nil {
		return l.done
	}
	return l.session.CloseChan()
}

// Err says why the link broke when this end found it broken: bytes on it
// were altered or forged (wrapping ErrTampered), or the peer fell silent
// (wrapping ErrSilent). It is nil otherwise: the link is up, or was
// closed, by either end.
func (l *Link) Err() error {
	if err := l.conn.Err(); err != nil {
		return err
	}
	return l.live.err()
}

// RemoteAddr is the peer's address, for messages about it.
func (l *Link) RemoteAddr() net.Addr { return l.conn.RemoteAddr() }
