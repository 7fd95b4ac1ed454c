package sdm_test

import (
	"context"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sdm-hpc/sdm/routing"
	"github.com/sdm-hpc/sdm/wire"
)

// cutter keeps the connections a node dialled, to drop them all at once
// as a broken network would.
type cutter struct {
	mu    sync.Mutex
	conns []net.Conn
}

func (c *cutter) wrap(dial dialer) dialer {
	return func(ctx context.Context) (net.Conn, error) {
		conn, err := dial(ctx)
		if err == nil {
			c.mu.Lock()
			c.conns = append(c.conns, conn)
			c.mu.Unlock()
		}
		return conn, err
	}
}

func (c *cutter) cut() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, conn := range c.conns {
		conn.Close()
	}
	c.conns = nil
}

// A server whose link to its parent is cut dials again and is taken back
// with its whole subtree: the loss is told, then the rejoin, and its
// ranks answer again as they were.
func TestCutLinkRejoins(t *testing.T) {
	const n, victim = 16, 1
	var cut cutter
	tt := startTreeDialling(t, n, 0, func(id int, dial dialer) dialer {
		if id == victim {
			return cut.wrap(dial)
		}
		return dial
	}, "ring")
	var b wire.Builder
	routing.Tree{Size: n}.Walk(victim, b.Add)
	sub := b.Set()
	before := describe(tt.command(wire.All(n), wire.OpWhere, nil, 5*time.Second))
	cut.cut()

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var lost, back wire.RankSet
	for !back.Equal(sub) {
		ev, err := tt.session.NextEvent(ctx)
		if err != nil {
			t.Fatalf("lost %v, back %v, want %v back: %v", lost, back, sub, err)
		}
		switch ev.Op {
		case wire.EventLost:
			lost = lost.Union(ev.Group.Ranks)
			if !strings.Contains(string(ev.Group.Body), "server 1") {
				t.Errorf("loss reported as %q", ev.Group.Body)
			}
		case wire.EventRejoined:
			back = back.Union(ev.Group.Ranks)
		}
	}
	if !lost.Equal(sub) {
		t.Fatalf("lost %v before the rejoin, want %v", lost, sub)
	}
	if got := describe(tt.command(wire.All(n), wire.OpWhere, nil, 5*time.Second)); got != before {
		t.Fatalf("where after the rejoin: %s, before: %s", got, before)
	}
}
