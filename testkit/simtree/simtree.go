// Package simtree runs a whole tree in one process, for tests of the
// floors above the node: rank servers with simulated debuggers
// (backend/sim) and a master, linked over loopback TCP, the master
// connected to a client.Session. What enters is the tree's shape and which
// servers to start; what leaves is the session, and control over each
// node (stop it, wait for it to end). No gdb and no child process.
package simtree

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/sdm-hpc/sdm/backend"
	"github.com/sdm-hpc/sdm/backend/sim"
	"github.com/sdm-hpc/sdm/client"
	"github.com/sdm-hpc/sdm/routing"
	"github.com/sdm-hpc/sdm/sdm"
	"github.com/sdm-hpc/sdm/testkit/testenv"
	"github.com/sdm-hpc/sdm/wire"
)

// Dialer is how a node connects to its parent (sdm.Config.DialUp).
type Dialer = func(context.Context) (net.Conn, error)

// Options describes a tree.
type Options struct {
	Size   int // servers, not counting the master
	Fanout int // 0: the binomial tree
	// Layout, when set, is the ranks each server serves (sdm.Config.Layout).
	Layout wire.Layout
	// Absent names servers that are never started: their ranks never join.
	Absent []int
	// Wrap, when set, wraps how node id dials its parent, to cut or
	// refuse its links as a broken network would.
	Wrap func(id int, dial Dialer) Dialer
	// ConnectTimeout bounds each node's wait for its parent (sdm's
	// default when zero).
	ConnectTimeout time.Duration
}

// Key is the session key every tree of this package uses.
var Key = wire.Key{1, 2, 3, 4, 5, 6, 7, 8}

// wait bounds every wait of the package: for the master to connect, the
// ranks to join, a node to stop.
const wait = 10 * time.Second

// Tree is a running tree and the front end's session to it.
type Tree struct {
	Session *client.Session
	t       testing.TB
	nodes   map[int]*node
}

type node struct {
	cancel context.CancelFunc
	ended  chan struct{} // closed when Run has returned
	err    error         // what Run returned, once ended is closed
}

// Start brings up the master and every server not absent, and returns
// once the master has connected to the front end; the servers may still
// be joining (Ready waits for them). The tree is stopped when the test
// ends.
func Start(t testing.TB, o Options) *Tree {
	t.Helper()
	cfg := wire.LinkConfig{Key: Key}
	ln, err := client.Listen("127.0.0.1:0", cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	shape := routing.Tree{Size: o.Size, Fanout: o.Fanout}
	ranks := o.Layout.Size(o.Size)
	listeners := make(map[int]net.Listener)
	for id := 0; id <= o.Size; id++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		listeners[id] = l
	}
	absent := make(map[int]bool)
	for _, id := range o.Absent {
		absent[id] = true
	}
	tt := &Tree{t: t, nodes: make(map[int]*node)}
	t.Cleanup(tt.stop)
	for id := 0; id <= o.Size; id++ {
		if absent[id] {
			listeners[id].Close()
			continue
		}
		up := ln.Addr().String()
		if p := shape.Parent(id); p >= 0 {
			up = listeners[p].Addr().String()
		}
		nc := sdm.Config{Index: id, Tree: shape, Listener: listeners[id], DialUp: sdm.DialTCP(up),
			Link: cfg, ConnectTimeout: o.ConnectTimeout, Layout: o.Layout}
		if o.Wrap != nil {
			nc.DialUp = o.Wrap(id, nc.DialUp)
		}
		if id != shape.Master() {
			nc.Backends = make(map[int]backend.Backend)
			o.Layout.Ranks(id).Each(func(r int) bool {
				nc.Backends[r] = sim.New(backend.Config{Rank: r, Size: ranks})
				return true
			})
		}
		tt.run(id, nc)
	}
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	if tt.Session, err = ln.Accept(ctx, ranks); err != nil {
		t.Fatal(err)
	}
	return tt
}

func (tt *Tree) run(id int, nc sdm.Config) {
	n, err := sdm.New(nc)
	if err != nil {
		tt.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	nd := &node{cancel: cancel, ended: make(chan struct{})}
	tt.nodes[id] = nd
	go func() {
		nd.err = n.Run(ctx)
		close(nd.ended)
	}()
}

// Ready waits until every rank has joined, then starts the simulated
// program (sim.Scenarios) on all of them.
func (tt *Tree) Ready(program string, args ...string) {
	tt.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	if err := tt.Session.WaitConnected(ctx, nil); err != nil {
		tt.t.Fatal(err)
	}
	start := wire.MustEncode(wire.Start{Program: program, Args: args})
	all := wire.All(tt.Session.Size())
	groups, err := tt.Session.Command(ctx, all, wire.OpStart, start, wait)
	if err != nil || !testenv.OKRanks(groups).Equal(all) {
		tt.t.Fatalf("start %s: %s %v", program, testenv.Describe(groups), err)
	}
}

// Stop ends node id as its owner would (a signal): its children are told
// to quit, and its parent sees it go.
func (tt *Tree) Stop(id int) { tt.nodes[id].cancel() }

// Ended waits until node id has stopped running and returns what its Run
// returned; the test fails when it does not stop in time.
func (tt *Tree) Ended(id int) error {
	tt.t.Helper()
	nd := tt.nodes[id]
	select {
	case <-nd.ended:
		return nd.err
	case <-time.After(wait):
		tt.t.Fatalf("node %d did not stop within %v", id, wait)
		return nil
	}
}

func (tt *Tree) stop() {
	if tt.Session != nil {
		tt.Session.Close()
	}
	for _, nd := range tt.nodes {
		nd.cancel()
	}
	for id, nd := range tt.nodes {
		select {
		case <-nd.ended:
		case <-time.After(wait):
			tt.t.Errorf("node %d did not stop within %v", id, wait)
		}
	}
}
