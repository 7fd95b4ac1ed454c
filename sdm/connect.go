package sdm

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"syscall"
	"time"

	"github.com/sdm-hpc/sdm/wire"
)

// Backoff bounds for reaching a parent that is not listening yet. Parents and
// children start in any order, and no event tells a child that a remote port
// opened, so it retries; the steps stay short because a parent usually
// appears within milliseconds. The longest is short too: the master, which
// a launcher may start after every server, appears only after the
// hundreds of milliseconds a large job's start takes, and server 0 would
// find it up to a step late; a dial that finds no one listening costs a
// few tens of microseconds, and few servers wait long (the tree's parents
// start before their children, in index order).
const (
	firstRetry = 2 * time.Millisecond
	maxRetry   = 10 * time.Millisecond
)

// connectUp dials the parent until it answers and authenticates, then
// introduces this node. At first a parent may not listen yet; again (to
// rejoin) it listened before, and one that refuses the connection now is
// gone: that ends the wait at once.
func (n *Node) connectUp(ctx context.Context, again bool) (*wire.Link, error) {
	ctx, cancel := context.WithTimeout(ctx, n.cfg.ConnectTimeout)
	defer cancel()
	wait := firstRetry
	var last error
	for {
		link, peer, err := n.tryUp(ctx)
		if err == nil {
			return link, nil
		}
		refused := errors.Is(err, wire.ErrAuth) || errors.Is(err, wire.ErrVersion) || errors.Is(err, wire.ErrNotSDM)
		switch {
		case n.cfg.AcceptUp != nil && peer != nil:
			// A front end that proved the key and then went away: the
			// master waits for the next.
			n.log.Printf("session port: lost the front end from %s: %v", peer, err)
		case refused:
			return nil, fmt.Errorf("%s refused us: %w", n.parentName(), err)
		case again && errors.Is(err, syscall.ECONNREFUSED):
			return nil, fmt.Errorf("%s is gone: %w", n.parentName(), err)
		}
		last = err
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("could not reach %s within %v: %w", n.parentName(), n.cfg.ConnectTimeout, last)
		case <-time.After(wait):
		}
		wait = min(2*wait, maxRetry)
	}
}

// tryUp makes one attempt; peer is set once a connection was made.
func (n *Node) tryUp(ctx context.Context) (link *wire.Link, peer net.Addr, err error) {
	if n.cfg.AcceptUp != nil {
		if link, err = n.cfg.AcceptUp(ctx); err != nil {
			return nil, nil, err
		}
		peer = link.RemoteAddr()
	} else {
		conn, err := n.cfg.DialUp(ctx)
		if err != nil {
			return nil, nil, err
		}
		peer = conn.RemoteAddr()
		if _, local := conn.(*net.UnixConn); local {
			link, err = wire.NewLocalLink(conn, true, n.cfg.Link)
		} else {
			link, err = wire.NewLink(conn, n.upEnds(), n.cfg.Link)
		}
		if err != nil {
			return nil, peer, err
		}
	}
	host, _ := os.Hostname()
	hello := wire.Hello{Index: n.cfg.Index, Size: n.servers, Host: host}
	if n.cfg.Index == n.servers {
		// The front end knows the job by its ranks, not by its servers.
		hello = wire.Hello{Index: n.size, Size: n.size, Host: host}
	}
	if err := wire.SendHello(link, hello); err != nil {
		link.Close()
		return nil, peer, err
	}
	return link, peer, nil
}

// upEnds describes the link the node dials to its parent: for the
// master, the front-end link, where the master speaks first.
func (n *Node) upEnds() wire.Ends {
	if n.cfg.Index == n.servers {
		return wire.Ends{Kind: wire.FrontEndLink, Initiator: true}
	}
	return wire.ToParent(n.parent, n.servers)
}

// DialLocal returns a Config.DialUp that dials addr, the Unix socket of
// this host's leader (wire.LocalAddress).
func DialLocal(addr *net.UnixAddr) func(context.Context) (net.Conn, error) {
	return func(ctx context.Context) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", addr.Name)
	}
}

// DialTCP returns a Config.DialUp that dials addr.
func DialTCP(addr string) func(context.Context) (net.Conn, error) {
	return func(ctx context.Context) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "tcp", addr)
	}
}
