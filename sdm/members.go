package sdm

import (
	"context"
	"fmt"
	"net"
	"os"
	"sync"

	"github.com/sdm-hpc/sdm/backend"
	"github.com/sdm-hpc/sdm/wire"
)

// served is one of the node's ranks while a backend debugs it: its own
// from the start, a member's once the member handed it over.
type served struct {
	be     backend.Backend
	pumped chan struct{} // closed when its pumpBackend has returned
	member *wire.Member  // the server that handed the rank over; nil for its own
}

// pump starts forwarding s's events (pumpBackend) under wg.
func (n *Node) pump(r int, s *served, wg *sync.WaitGroup) {
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(s.pumped)
		n.pumpBackend(r, s.be)
	}()
}

// rank returns the backend serving rank r, one of the node's own, or
// why none does: its member has not handed it over, or is gone.
func (n *Node) rank(r int) (*served, string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if s := n.ranks[r]; s != nil {
		return s, ""
	}
	return nil, n.absent[r]
}

// present is the node's own ranks that a backend serves now.
func (n *Node) present() wire.RankSet {
	n.mu.Lock()
	defer n.mu.Unlock()
	var b wire.Builder
	for r := range n.ranks {
		b.Add(r)
	}
	return b.Set()
}

// adopt takes the rank a member hands over on conn (Config.Adopt),
// serves it until the member hangs up, and then reports it lost; release
// is called once the handshake is over.
func (n *Node) adopt(ctx context.Context, conn net.Conn, release func(), wg *sync.WaitGroup) {
	m, err := wire.AcceptMember(conn, n.servers, n.handshakeTimeout())
	release()
	if err != nil {
		n.log.Printf("dropped a connection from this host: %v", err)
		return
	}
	r := m.Index // one rank per server: no layout here
	n.mu.Lock()
	_, taken := n.ranks[r]
	switch {
	case !n.members.Contains(r):
		n.mu.Unlock()
		m.Refuse(fmt.Sprintf("server %d is not one of the servers of server %d's host", r, n.cfg.Index))
		return
	case taken:
		n.mu.Unlock()
		m.Refuse(fmt.Sprintf("rank %d is served already", r))
		return
	case n.quitting:
		n.mu.Unlock()
		m.Close(true)
		return
	}
	n.mu.Unlock()
	be, err := n.cfg.Adopt(r, m)
	if err != nil {
		n.log.Printf("could not take rank %d from server %d: %v", r, r, err)
		m.Refuse(err.Error())
		return
	}
	if err := m.Admit(); err != nil {
		n.log.Printf("could not take rank %d from server %d: %v", r, r, err)
		be.Close()
		return
	}
	s := &served{be: be, pumped: make(chan struct{}), member: m}
	n.mu.Lock()
	if n.quitting || ctx.Err() != nil {
		n.mu.Unlock()
		be.Close()
		m.Close(true)
		return
	}
	n.ranks[r] = s
	delete(n.absent, r)
	n.mu.Unlock()
	if n.cfg.Trace != nil {
		n.cfg.Trace.Printf("server %d joined from this host, handing over rank %d", r, r)
	}
	// Told before any of its events: the pump starts after.
	n.events.add(wire.EventConnected, wire.Group{Ranks: wire.Single(r)})
	n.pump(r, s, wg)
	select {
	case <-m.Done():
	case <-ctx.Done():
		return // shutdown closes it
	}
	// As a child's loss is told (linkLoss).
	host, _ := os.Hostname()
	reason := fmt.Sprintf("connection closed by server %d on %s", r, host)
	n.mu.Lock()
	if n.ranks[r] != s {
		n.mu.Unlock()
		return
	}
	delete(n.ranks, r)
	n.absent[r] = reason
	quitting := n.quitting
	n.mu.Unlock()
	be.Close()
	if !quitting {
		n.log.Printf("%s", reason)
		n.events.add(wire.EventLost, wire.Group{Ranks: wire.Single(r), Body: []byte(reason)})
	}
}
