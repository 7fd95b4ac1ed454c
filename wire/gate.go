package wire

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"syscall"
	"time"
)

// MaxPending bounds the connections a listener authenticates at once.
// Past it, the one that has waited longest is let go to make room: a
// peer that holds the key finishes its handshake in a round trip, so
// only a flood faster than that could keep it out, where one handshake
// at a time let 20 silent connections keep it out for 100 s.
const MaxPending = 256

// Pending counts the connections whose handshake is under way on one
// listener, and lets the oldest go when there are MaxPending (Max when
// set) of them.
type Pending struct {
	Max   int
	mu    sync.Mutex
	conns []net.Conn // oldest first
}

// Add counts conn as pending, letting the oldest go if need be; release
// ends the count once its handshake is over, whichever way.
func (p *Pending) Add(conn net.Conn) (release func()) {
	limit := p.Max
	if limit <= 0 {
		limit = MaxPending
	}
	p.mu.Lock()
	for len(p.conns) >= limit {
		p.conns[0].Close()
		p.conns = p.conns[1:]
	}
	p.conns = append(p.conns, conn)
	p.mu.Unlock()
	return func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		for i, c := range p.conns {
			if c == conn {
				p.conns = append(p.conns[:i], p.conns[i+1:]...)
				return
			}
		}
	}
}

// Close lets go of every connection still pending.
func (p *Pending) Close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

// Refusals logs the peers a listener refused, one line at first and then
// at most one per Every, with the count of those it stands for: a flood
// of connections that fail their handshake is told, with its size, in a
// few lines and not in one each.
type Refusals struct {
	Log   func(format string, args ...any)
	What  string        // "session port", …
	Every time.Duration // 10 s when zero
	mu    sync.Mutex
	last  time.Time   // when the last line was written
	count int         // refused since then
	peer  net.Addr    // the latest of them, and why
	err   error       //
	timer *time.Timer // writes the next line, when one is due
}

// Refused records that peer was refused for err.
func (r *Refusals) Refused(peer net.Addr, err error) {
	every := r.Every
	if every <= 0 {
		every = 10 * time.Second
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.count++
	r.peer, r.err = peer, err
	if wait := every - time.Since(r.last); wait > 0 {
		if r.timer == nil {
			r.timer = time.AfterFunc(wait, r.flush)
		}
		return
	}
	r.write()
}

// flush writes the line that the refusals since the last one are due.
func (r *Refusals) flush() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.timer = nil
	if r.count > 0 {
		r.write()
	}
}

// write logs the refusals counted so far; r.mu is held.
func (r *Refusals) write() {
	if r.count == 1 {
		r.Log("%s: dropped a connection from %s: %v", r.What, r.peer, r.err)
	} else {
		r.Log("%s: dropped %d connections (the latest from %s: %v)", r.What, r.count, r.peer, r.err)
	}
	r.count, r.last = 0, time.Now()
}

// Gate admits peers on a listener, each connection authenticated by admit
// in a goroutine of its own under its own deadline (Pending bounds how
// many at once), so that no number of silent or slow peers without the
// key delays one that holds it. Next returns what admit made of the
// connections it admitted, in the order they finished.
type Gate[T any] struct {
	ln      net.Listener
	admit   func(net.Conn) (T, error)
	refused func(net.Addr, error)
	pending Pending
	done    chan struct{}
	ready   chan T
	stop    sync.Once
	err     error // why accepting stopped, set before done is closed
}

// NewGate starts admitting peers on ln; refused hears of every peer that
// admit turned away.
func NewGate[T any](ln net.Listener, admit func(net.Conn) (T, error), refused func(net.Addr, error)) *Gate[T] {
	g := &Gate[T]{ln: ln, admit: admit, refused: refused, done: make(chan struct{}), ready: make(chan T)}
	go g.accept()
	return g
}

func (g *Gate[T]) accept() {
	for {
		conn, err := Accept(g.ln, g.done)
		if err != nil {
			g.end(err)
			return
		}
		release := g.pending.Add(conn)
		go func() {
			v, err := g.admit(conn)
			release()
			if err != nil {
				g.refused(conn.RemoteAddr(), err)
				return
			}
			select {
			case g.ready <- v:
			case <-g.done:
				if c, ok := any(v).(interface{ Close() error }); ok {
					c.Close()
				}
			}
		}()
	}
}

// Accept takes the next connection on ln. When descriptors run out it
// waits and tries again, until done is closed: those of the handshakes
// under way come back within their deadline, where giving up would
// close the port for good.
func Accept(ln net.Listener, done <-chan struct{}) (net.Conn, error) {
	wait := time.Duration(0)
	for {
		conn, err := ln.Accept()
		if err == nil || !scarce(err) {
			return conn, err
		}
		wait = min(max(2*wait, 5*time.Millisecond), time.Second)
		select {
		case <-time.After(wait):
		case <-done:
			return nil, err
		}
	}
}

// scarce says that err is a shortage that passes: out of descriptors, or
// a connection reset before it was taken.
func scarce(err error) bool {
	return errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE) ||
		errors.Is(err, syscall.ECONNABORTED) || errors.Is(err, syscall.ENOBUFS)
}

// Next returns the next peer admitted, waiting under ctx.
func (g *Gate[T]) Next(ctx context.Context) (T, error) {
	var zero T
	select {
	case v := <-g.ready:
		return v, nil
	case <-g.done:
		if errors.Is(g.err, net.ErrClosed) || g.err == nil {
			return zero, errors.New("no longer accepting")
		}
		return zero, fmt.Errorf("accept: %w", g.err)
	case <-ctx.Done():
		return zero, ctx.Err()
	}
}

// Close stops accepting (it closes the listener) and lets go of the
// handshakes under way; what they would have admitted is closed.
func (g *Gate[T]) Close() { g.end(nil) }

// end stops the gate once; err is why accepting stopped (nil: Close).
func (g *Gate[T]) end(err error) {
	g.stop.Do(func() {
		g.err = err
		close(g.done)
		g.ln.Close()
		g.pending.Close()
	})
}
