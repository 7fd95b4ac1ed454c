package sdm

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"syscall"
	"time"

	"github.com/sdm-hpc/sdm/wire"
)

// acceptChildren admits children until ln closes. Each newcomer is
// authenticated in its own goroutine under its own deadline, so one that
// stalls mid-handshake delays no one else; n.handshakes bounds how many at
// once, letting the longest waiting go first.
func (n *Node) acceptChildren(ctx context.Context, ln net.Listener, wg *sync.WaitGroup) {
	// Handshakes under way end with the node, not at their deadline.
	context.AfterFunc(ctx, n.handshakes.Close)
	for {
		conn, err := wire.Accept(ln, ctx.Done())
		if err != nil {
			if ctx.Err() == nil && !errors.Is(err, net.ErrClosed) {
				n.log.Printf("accept: %v", err)
			}
			return
		}
		release := n.handshakes.Add(conn)
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, local := conn.(*net.UnixConn); local && n.cfg.Adopt != nil {
				n.adopt(ctx, conn, release, wg)
				return
			}
			n.admit(ctx, conn, release)
		}()
	}
}

// admit authenticates conn, learns which child it is and serves it;
// release is called once the handshake is over.
func (n *Node) admit(ctx context.Context, conn net.Conn, release func()) {
	peer := conn.RemoteAddr()
	link, hello, unwatch, ok := n.handshake(ctx, conn, release)
	if !ok {
		return
	}
	c, out, name, again, ok := n.register(link, hello, peer, unwatch)
	if !ok {
		link.Close()
		return
	}
	if again {
		n.log.Printf("server %d rejoined from %s", c.index, peer)
	}
	if n.cfg.Trace != nil {
		n.cfg.Trace.Printf("server %d joined from %s", c.index, peer)
	}
	sent := make(chan struct{})
	go func() {
		defer close(sent)
		out.run(func(err error) {
			n.childLost(c, link, fmt.Sprintf("could not send to %s: %v", name, err))
		})
	}()
	n.serveChild(c, link, name)
	<-sent
}

// handshake authenticates conn and reads its hello. Until the child is
// registered, stopping the node must close the link here (unwatch stops
// that); afterwards shutdown does, after telling the child to quit.
func (n *Node) handshake(ctx context.Context, conn net.Conn, release func()) (*wire.Link, wire.Hello, func() bool, bool) {
	peer := conn.RemoteAddr()
	var link *wire.Link
	var err error
	if _, local := conn.(*net.UnixConn); local {
		link, err = wire.NewLocalLink(conn, false, n.cfg.Link)
	} else {
		link, err = wire.NewLink(conn, wire.FromChild(n.cfg.Index, n.servers), n.cfg.Link)
	}
	if err != nil {
		release()
		n.refusals.Refused(peer, err)
		return nil, wire.Hello{}, nil, false
	}
	unwatch := context.AfterFunc(ctx, func() { link.Close() })
	hello, err := wire.ReadHello(link, n.handshakeTimeout())
	release()
	if err != nil {
		n.log.Printf("tree port: dropped a connection from %s: %v", peer, err)
		link.Close()
		return nil, wire.Hello{}, nil, false
	}
	return link, hello, unwatch, true
}

// register makes link the link of the child hello names, and returns the
// child, the outbox of its link, its name, and whether it had joined
// before; not ok when the link is not to be served (the caller closes
// it).
func (n *Node) register(link *wire.Link, hello wire.Hello, peer net.Addr, unwatch func() bool) (c *child, out *outbox, name string, again, ok bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	c = n.children[hello.Index]
	switch {
	case c == nil:
		n.log.Printf("tree port: dropped a connection from %s: index %d is not a child of %d", peer, hello.Index, n.cfg.Index)
		return nil, nil, "", false, false
	case hello.Size != n.servers:
		n.log.Printf("tree port: dropped a connection from %s: child %d thinks the job has %d ranks, not %d", peer, hello.Index, hello.Size, n.servers)
		return nil, nil, "", false, false
	}
	if !unwatch() || n.quitting {
		return nil, nil, "", false, false
	}
	// A child that dials again holds its old link for broken, whatever
	// this end thinks of it: its loss is told (once: the old link's reader
	// may find it first) and the commands waiting on it answered for, as
	// the child dropped their answers, and the new link replaces it.
	if old := c.link; old != nil {
		n.mu.Unlock()
		n.childLost(c, old, fmt.Sprintf("connection to server %d broken (it dialled again)", c.index))
		n.mu.Lock()
		if n.quitting || c.link != nil {
			return nil, nil, "", false, false
		}
	}
	again = c.connected
	out = newOutbox(link)
	c.link, c.out, c.quiet, c.joined, c.connected = link, out, false, wire.RankSet{}, true
	c.host = hello.Host
	if c.host == "" {
		c.host, _, _ = net.SplitHostPort(peer.String())
	}
	return c, out, c.name(), again, true
}

func (n *Node) handshakeTimeout() time.Duration {
	if d := n.cfg.Link.HandshakeTimeout; d > 0 {
		return d
	}
	return wire.DefaultHandshakeTimeout
}

// serveChild reads c's control and output streams until the link breaks,
// then declares c's subtree lost, naming it name (c.name() as the link
// was admitted: c's fields change under the node's mutex when it rejoins).
func (n *Node) serveChild(c *child, link *wire.Link, name string) {
	// ended is closed once c's output stream has nothing more to give:
	// its end was read, or the stream broke.
	ended := make(chan struct{})
	var endOnce sync.Once
	end := func() { endOnce.Do(func() { close(ended) }) }
	go func() {
		defer end()
		for {
			m, err := link.RecvOutput()
			if err != nil {
				return
			}
			if m.Op == wire.EventOutputEnd {
				end()
				continue
			}
			n.forwardOutput(c, m)
		}
	}()
	for {
		m, err := link.Recv()
		if err != nil {
			n.childLost(c, link, linkLoss(name, n.cfg.Link, err))
			return
		}
		switch m.Kind {
		case wire.KindReply:
			n.childReply(c, m, ended)
		case wire.KindEvent:
			n.forwardEvents(c, link, m)
		default:
			n.log.Printf("ignoring %s %q from child %d", m.Kind, m.Op, c.index)
		}
	}
}

// forwardEvents passes a child's events up, keeping only ranks of its own
// subtree so that a confused child cannot speak for others, and keeps
// track of which of them have joined.
func (n *Node) forwardEvents(c *child, link *wire.Link, m *wire.Message) {
	for _, g := range m.Groups {
		g.Ranks = g.Ranks.Intersect(c.ranks)
		if g.Ranks.Empty() {
			continue
		}
		switch m.Op {
		case wire.EventConnected, wire.EventRejoined, wire.EventLost:
			n.mu.Lock()
			if c.link == link {
				if m.Op == wire.EventLost {
					c.joined, c.gone = c.joined.Minus(g.Ranks), c.gone.Union(g.Ranks)
				} else {
					c.joined, c.gone = c.joined.Union(g.Ranks), c.gone.Minus(g.Ranks)
				}
			}
			n.mu.Unlock()
		}
		n.events.add(m.Op, g)
	}
}

// childReply counts c's answer in its call. An answer to quit counts
// once c's output stream has ended (or the call's flushBy has passed):
// c sent its output before the answer, but the two streams are read
// apart, and what is still unread would otherwise miss this node's own
// flush before it answers.
func (n *Node) childReply(c *child, m *wire.Message, outputEnded <-chan struct{}) {
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
	if cl != nil && cl.op == wire.OpQuit {
		t := time.NewTimer(time.Until(cl.flushBy))
		select {
		case <-outputEnded:
		case <-t.C:
			n.mu.Lock()
			name := c.name()
			n.mu.Unlock()
			n.log.Printf("output of %s still unread when the session ended at %v was dropped", name, cl.flushBy.Format(time.TimeOnly))
		}
		t.Stop()
	}
	if cl != nil {
		n.settle(cl, func(cl *call) { cl.answer(c.index, m.Groups) })
	}
}

// childLost fails everything c owes and tells the parent its ranks are
// gone: the event first, so that the front end learns of the loss before
// any answer that it fails.
func (n *Node) childLost(c *child, link *wire.Link, reason string) {
	link.Close()
	n.mu.Lock()
	if c.link != link {
		n.mu.Unlock()
		return // replaced by the child's new link, or lost already
	}
	lost := c.ranks.Minus(c.gone)
	c.link, c.out, c.lost, c.quiet, c.joined, c.gone = nil, nil, reason, false, wire.RankSet{}, wire.RankSet{}
	calls := n.pending()
	quitting := n.quitting
	n.mu.Unlock()
	if !quitting {
		n.log.Printf("%s (%s)", reason, link.RemoteAddr())
		if !lost.Empty() {
			n.events.add(wire.EventLost, wire.Group{Ranks: lost, Body: []byte(reason)})
		}
	}
	for _, cl := range calls {
		n.settle(cl, func(cl *call) { cl.fail(c.index, wire.StatusLost, reason) })
	}
}

// awaited are the children that a call in flight waits for; n.mu is held.
func (n *Node) awaited() map[int]bool {
	due := map[int]bool{}
	for _, cl := range n.calls {
		for i := range cl.waiting {
			due[i] = true
		}
	}
	return due
}

// pending lists the calls in flight; n.mu is held.
func (n *Node) pending() []*call {
	calls := make([]*call, 0, len(n.calls))
	for _, cl := range n.calls {
		calls = append(calls, cl)
	}
	return calls
}

// watchChildren notices children that fall silent, and stops commands
// from waiting for them (see Config.NotResponding), until ctx ends.
func (n *Node) watchChildren(ctx context.Context) {
	ticker := time.NewTicker(min(time.Second, n.cfg.NotResponding/4))
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
		n.checkChildren()
	}
}

// checkChildren marks the children not heard from for NotResponding as
// quiet, answering for their subtrees in every call that waits for them,
// and those heard from again as not.
func (n *Node) checkChildren() {
	n.mu.Lock()
	var quiet []*child
	why := map[*child]string{}
	awaited := n.awaited()
	for _, c := range n.children {
		if c.link == nil {
			continue
		}
		// A link is asked for a word only while an answer is due from
		// it, or it was found silent: idle, it wakes no one.
		if c.link.Expect(c.quiet || awaited[c.index]) {
			c.link.Ping()
		}
		silent := c.link.Silence()
		switch {
		case silent >= n.cfg.NotResponding && !c.quiet:
			c.quiet = true
			quiet = append(quiet, c)
			why[c] = notResponding(c.name())
			n.log.Printf("server %d not responding: nothing heard for %v", c.index, silent.Round(time.Second))
		case silent < n.cfg.NotResponding && c.quiet:
			c.quiet = false
			n.log.Printf("%s responding again", c.name())
		}
	}
	var calls []*call
	if len(quiet) > 0 {
		calls = n.pending()
	}
	n.mu.Unlock()
	for _, c := range quiet {
		for _, cl := range calls {
			n.settle(cl, func(cl *call) { cl.fail(c.index, wire.StatusTimeout, why[c]) })
		}
	}
}

// linkLoss says why the link to who broke, from what reading it said:
// the peer closed it (or its process ended), it fell silent, or its
// bytes were tampered with.
func linkLoss(who string, cfg wire.LinkConfig, err error) string {
	switch {
	case errors.Is(err, wire.ErrTampered):
		return fmt.Sprintf("link to %s broken: %v", who, err)
	case errors.Is(err, wire.ErrSilent):
		return fmt.Sprintf("no word from %s for %v: link dropped", who, cfg.SilenceLimit())
	case errors.Is(err, io.EOF), errors.Is(err, syscall.ECONNRESET), errors.Is(err, net.ErrClosed):
		return "connection closed by " + who
	}
	return fmt.Sprintf("link to %s failed: %v", who, err)
}
