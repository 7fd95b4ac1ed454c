package sdm

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/sdm-hpc/sdm/wire"
)

// acceptChildren admits children until the listener closes. Each newcomer
// is authenticated in its own goroutine, so one that stalls mid-handshake
// delays no one else.
func (n *Node) acceptChildren(ctx context.Context, wg *sync.WaitGroup) {
	for {
		conn, err := n.cfg.Listener.Accept()
		if err != nil {
			if ctx.Err() == nil && !errors.Is(err, net.ErrClosed) {
				n.log.Printf("accept: %v", err)
			}
			return
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			n.admit(ctx, conn)
		}()
	}
}

// admit authenticates conn, learns which child it is and serves it.
func (n *Node) admit(ctx context.Context, conn net.Conn) {
	peer := conn.RemoteAddr()
	link, err := wire.NewLink(conn, wire.FromChild(n.cfg.Index, n.cfg.Tree.Size), n.cfg.Link)
	if err != nil {
		n.log.Printf("dropped connection from %s: %v", peer, err)
		return
	}
	// Until the child is registered, stopping the node must close the link
	// here; afterwards shutdown does, after telling the child to quit.
	unwatch := context.AfterFunc(ctx, func() { link.Close() })
	hello, err := ReadHello(link, n.handshakeTimeout())
	if err != nil {
		n.log.Printf("dropped connection from %s: %v", peer, err)
		link.Close()
		return
	}
	n.mu.Lock()
	c := n.children[hello.Index]
	switch {
	case c == nil:
		n.mu.Unlock()
		n.log.Printf("dropped connection from %s: index %d is not a child of %d", peer, hello.Index, n.cfg.Index)
		link.Close()
		return
	case c.link != nil:
		n.mu.Unlock()
		n.log.Printf("dropped connection from %s: child %d is already connected", peer, hello.Index)
		link.Close()
		return
	case hello.Size != n.cfg.Tree.Size:
		n.mu.Unlock()
		n.log.Printf("dropped connection from %s: child %d thinks the job has %d ranks, not %d", peer, hello.Index, hello.Size, n.cfg.Tree.Size)
		link.Close()
		return
	}
	if !unwatch() || n.quitting {
		n.mu.Unlock()
		link.Close()
		return
	}
	c.link = link
	n.mu.Unlock()
	n.cfg.Trace.Printf("server %d joined from %s", c.index, peer)
	n.serveChild(c, link)
}

func (n *Node) handshakeTimeout() time.Duration {
	if d := n.cfg.Link.HandshakeTimeout; d > 0 {
		return d
	}
	return wire.DefaultHandshakeTimeout
}

// serveChild reads c's control and output streams until the link breaks,
// then declares c's subtree lost.
func (n *Node) serveChild(c *child, link *wire.Link) {
	go func() {
		for {
			m, err := link.RecvOutput()
			if err != nil {
				return
			}
			n.forwardOutput(c, m)
		}
	}()
	for {
		m, err := link.Recv()
		if err != nil {
			n.childLost(c, link, fmt.Sprintf("connection to server %d (%s) lost: %v", c.index, link.RemoteAddr(), err))
			return
		}
		switch m.Kind {
		case wire.KindReply:
			n.childReply(c, m)
		case wire.KindEvent:
			n.forwardEvents(c, m, n.events)
		default:
			n.log.Printf("ignoring %s %q from child %d", m.Kind, m.Op, c.index)
		}
	}
}

// forwardEvents passes a child's events up, keeping only ranks of its own
// subtree so that a confused child cannot speak for others.
func (n *Node) forwardEvents(c *child, m *wire.Message, to *batcher) {
	for _, g := range m.Groups {
		g.Ranks = g.Ranks.Intersect(c.ranks)
		if !g.Ranks.Empty() {
			to.add(m.Op, g)
		}
	}
}

func (n *Node) childReply(c *child, m *wire.Message) {
	if m.ID == shutdownID {
		select {
		case n.quitAcks <- c.index:
		default:
		}
		return
	}
	n.mu.Lock()
	cl := n.calls[m.ID]
	n.mu.Unlock()
	if cl != nil {
		n.settle(cl, func(cl *call) { cl.answer(c.index, m.Groups) })
	}
}

// childLost fails everything c owes and tells the parent its ranks are gone.
func (n *Node) childLost(c *child, link *wire.Link, reason string) {
	link.Close()
	n.mu.Lock()
	if c.link != link {
		n.mu.Unlock()
		return
	}
	c.link, c.lost = nil, reason
	calls := make([]*call, 0, len(n.calls))
	for _, cl := range n.calls {
		calls = append(calls, cl)
	}
	quitting := n.quitting
	n.mu.Unlock()
	for _, cl := range calls {
		n.settle(cl, func(cl *call) { cl.fail(c.index, wire.StatusLost, reason) })
	}
	if !quitting {
		n.log.Print(reason)
		n.events.add(wire.EventLost, wire.Group{Ranks: c.ranks, Body: []byte(reason)})
	}
}
