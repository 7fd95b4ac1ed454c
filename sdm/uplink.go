package sdm

import "github.com/sdm-hpc/sdm/wire"

// maxHeld bounds what a server keeps for its parent while it has no link
// to it: the events and output of a minute's wait to rejoin, not a
// flood's.
const maxHeld = 4096

// upward is a message on its way to the parent, and the stream it takes.
type upward struct {
	m    *wire.Message
	send func(*wire.Link, *wire.Message) error
}

// sendUp sends m on the link to the parent. It never waits for a link:
// while there is none (before the first, or while the server rejoins
// after the old one broke), events and output are held and go up first
// on the next link, and answers are dropped, since the parent answered
// for this subtree already when the link broke.
func (n *Node) sendUp(m *wire.Message, send func(*wire.Link, *wire.Message) error) {
	n.upMu.Lock()
	up := n.up
	if up == nil {
		n.hold(upward{m, send})
		n.upMu.Unlock()
		return
	}
	n.upMu.Unlock()
	err := send(up, m)
	if err == nil {
		return
	}
	select {
	case <-up.Done():
		n.upMu.Lock()
		if n.up == up || n.up == nil {
			n.hold(upward{m, send})
		}
		n.upMu.Unlock()
		return
	default:
	}
	n.mu.Lock()
	quitting := n.quitting
	n.mu.Unlock()
	// At the end the parent may hang up first: no news.
	if !quitting {
		n.log.Printf("send %s %s to parent: %v", m.Kind, m.Op, err)
	}
}

// hold keeps u for the next link to the parent; n.upMu is held.
func (n *Node) hold(u upward) {
	if u.m.Kind == wire.KindReply || n.upClosed {
		return
	}
	if len(n.held) == maxHeld {
		n.log.Printf("no link to %s: dropped %s %s", n.parentName(), u.m.Kind, u.m.Op)
		return
	}
	n.held = append(n.held, u)
}

// setUp makes l the link to the parent, once first (when not nil) and
// then what was held for it have gone up on it.
func (n *Node) setUp(l *wire.Link, first *wire.Message) {
	// A send that fails here finds the link broken: Run's loop sees it.
	if first != nil {
		l.Send(first)
	}
	for {
		n.upMu.Lock()
		if n.upClosed {
			n.upMu.Unlock()
			l.Close()
			return
		}
		held := n.held
		n.held = nil
		if len(held) == 0 {
			n.up = l
			n.upMu.Unlock()
			return
		}
		n.upMu.Unlock()
		for _, u := range held {
			u.send(l, u.m)
		}
	}
}

// dropUp forgets the link to the parent, which broke.
func (n *Node) dropUp() {
	n.upMu.Lock()
	n.up = nil
	n.upMu.Unlock()
}

// parentLink is the link to the parent, nil when there is none.
func (n *Node) parentLink() *wire.Link {
	n.upMu.Lock()
	defer n.upMu.Unlock()
	return n.up
}

// closeUp closes the link to the parent, now and for good.
func (n *Node) closeUp() {
	n.upMu.Lock()
	defer n.upMu.Unlock()
	n.upClosed = true
	n.held = nil
	if n.up != nil {
		n.up.Close()
	}
}
