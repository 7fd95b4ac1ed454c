package sdm_test

import (
	"context"
	"errors"
	"log"
	"net"
	"runtime"
	"strings"
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

// tree is a whole tree of nodes in this process, each with its own
// listener and a sim backend, connected over loopback TCP to a client.
type tree struct {
	t       testing.TB
	session *client.Session
	cancels map[int]context.CancelFunc
	done    map[int]chan error
}

func testKey(b byte) wire.Key {
	var k wire.Key
	for i := range k {
		k[i] = b
	}
	return k
}

// startTree brings up n servers plus the master and waits until all joined.
func startTree(t testing.TB, n, fanout int, program string, args ...string) *tree {
	t.Helper()
	return startTreeDialling(t, n, fanout, nil, program, args...)
}

// dialer is how a node connects to its parent.
type dialer = func(context.Context) (net.Conn, error)

// startTreeDialling is startTree with node id's dialling of its parent
// wrapped by wrap, when not nil.
func startTreeDialling(t testing.TB, n, fanout int, wrap func(id int, dial dialer) dialer, program string, args ...string) *tree {
	t.Helper()
	var configure func(*sdm.Config)
	if wrap != nil {
		configure = func(c *sdm.Config) { c.DialUp = wrap(c.Index, c.DialUp) }
	}
	tt := launchTree(t, n, fanout, configure, func(id int) backend.Backend { return sim.New(backendConfig(id, n)) })
	start := wire.MustEncode(wire.Start{Program: program, Args: args})
	groups := tt.command(wire.All(n), wire.OpStart, start, 5*time.Second)
	if len(groups) == 0 || groups[0].Status != wire.StatusOK {
		t.Fatalf("start: %s", describe(groups))
	}
	return tt
}

// launchTree brings up n servers, each with the backend newBackend makes
// for it, plus the master, and waits until all joined; configure, when
// not nil, changes each node's configuration first.
func launchTree(t testing.TB, n, fanout int, configure func(*sdm.Config), newBackend func(id int) backend.Backend) *tree {
	t.Helper()
	cfg := wire.LinkConfig{Key: testKey(1)}
	ln, err := client.Listen("127.0.0.1:0", cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	tr := routing.Tree{Size: n, Fanout: fanout}
	listeners := make(map[int]net.Listener)
	for id := 0; id <= n; id++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		listeners[id] = l
	}
	tt := &tree{t: t, cancels: map[int]context.CancelFunc{}, done: map[int]chan error{}}
	for id := 0; id <= n; id++ {
		up := ln.Addr().String()
		if p := tr.Parent(id); p >= 0 {
			up = listeners[p].Addr().String()
		}
		nc := sdm.Config{Index: id, Tree: tr, Listener: listeners[id], DialUp: sdm.DialTCP(up), Link: cfg}
		if id != tr.Master() {
			nc.Backends = map[int]backend.Backend{id: newBackend(id)}
		}
		if configure != nil {
			configure(&nc)
		}
		node, err := sdm.New(nc)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		tt.cancels[id], tt.done[id] = cancel, done
		go func() { done <- node.Run(ctx) }()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := ln.Accept(ctx, n)
	if err != nil {
		t.Fatal(err)
	}
	tt.session = s
	t.Cleanup(tt.stop)
	if err := s.WaitConnected(ctx, nil); err != nil {
		t.Fatal(err)
	}
	return tt
}

func (tt *tree) stop() {
	tt.session.Close()
	for _, cancel := range tt.cancels {
		cancel()
	}
	for id, done := range tt.done {
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			tt.t.Errorf("node %d did not stop within 5s", id)
		}
	}
}

func (tt *tree) command(ranks wire.RankSet, op string, body []byte, timeout time.Duration) []wire.Group {
	tt.t.Helper()
	groups, err := tt.session.Command(context.Background(), ranks, op, body, timeout)
	if err != nil {
		tt.t.Fatalf("%s: %v", op, err)
	}
	return groups
}

func TestWhereMergesIntoGroups(t *testing.T) {
	for _, fanout := range []int{0, 3} {
		tt := startTree(t, 16, fanout, "hang", "5")
		got := describe(tt.command(wire.All(16), wire.OpWhere, nil, 5*time.Second))
		want := "[0-4,6-15] ok MPI_Recv; [5] ok compute; "
		if got != want {
			t.Errorf("fanout %d: where = %q, want %q", fanout, got, want)
		}
		got = describe(tt.command(wire.Range(4, 6), wire.OpWhere, nil, 5*time.Second))
		if want := "[4,6] ok MPI_Recv; [5] ok compute; "; got != want {
			t.Errorf("fanout %d: [4-6] where = %q, want %q", fanout, got, want)
		}
	}
}

func TestNoSuchRank(t *testing.T) {
	tt := startTree(t, 4, 0, "ring")
	got := describe(tt.command(wire.Range(2, 9), wire.OpStatus, nil, 5*time.Second))
	if !strings.Contains(got, "[4-9] no such rank") || !strings.Contains(got, "[2-3] ok") {
		t.Fatalf("status of 2-9 in a job of 4: %q", got)
	}
}

func TestSlowCommandHoldsUpNoOne(t *testing.T) {
	tt := startTree(t, 8, 0, "hang")
	slow := make(chan []wire.Group, 1)
	go func() {
		g, _ := tt.session.Command(context.Background(), wire.Single(3), sim.OpSleep, wire.MustEncode(2*time.Second), 10*time.Second)
		slow <- g
	}()
	// Commands issued while the slow one runs, including to the same rank,
	// are answered while it is still in flight.
	for i := 0; i < 5; i++ {
		groups := tt.command(wire.All(8), wire.OpStatus, nil, 5*time.Second)
		if ok := okRanks(groups); !ok.Equal(wire.All(8)) {
			t.Fatalf("status during a slow command: %s", describe(groups))
		}
		select {
		case g := <-slow:
			t.Fatalf("the slow command finished first (%s): test proves nothing", describe(g))
		default:
		}
	}
	if g := <-slow; len(g) != 1 || g[0].Status != wire.StatusOK {
		t.Fatalf("slow command: %s", describe(g))
	}
}

func TestDeadlineNamesMissingRanks(t *testing.T) {
	tt := startTree(t, 8, 0, "ring")
	groups := tt.command(wire.All(8), sim.OpSleep, wire.MustEncode(time.Duration(0)), 5*time.Second)
	if len(groups) != 1 {
		t.Fatalf("zero sleep: %s", describe(groups))
	}
	groups = tt.command(wire.Range(5, 7), sim.OpSleep, wire.MustEncode(time.Duration(0)), 5*time.Second)
	if len(groups) != 1 {
		t.Fatalf("zero sleep on 5-7: %s", describe(groups))
	}
	start := time.Now()
	groups = tt.command(wire.All(8), sim.OpSleep, wire.MustEncode(1500*time.Millisecond), 500*time.Millisecond)
	var timedOut wire.RankSet
	for _, g := range groups {
		if g.Status == wire.StatusTimeout {
			timedOut = timedOut.Union(g.Ranks)
		}
	}
	if !timedOut.Equal(wire.All(8)) {
		t.Fatalf("all ranks sleep longer than the deadline, got %s", describe(groups))
	}
	if d := time.Since(start); d > 1400*time.Millisecond {
		t.Fatalf("a 500ms deadline took %v", d)
	}
}

func TestEventsMergeAcrossRanks(t *testing.T) {
	tt := startTree(t, 16, 0, "ring")
	tt.command(wire.All(16), wire.OpRun, nil, 5*time.Second)
	var stopped wire.RankSet
	stops := 0
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for !stopped.Equal(wire.All(16)) {
		ev, err := tt.session.NextEvent(ctx)
		if err != nil {
			t.Fatalf("only %v stopped: %v", stopped, err)
		}
		if ev.Op == wire.EventStopped {
			stopped = stopped.Union(ev.Group.Ranks)
			stops++
		}
	}
	// Every rank stops at one of two places (rank 0 in MPI_Send); merging
	// along the way means far fewer events than ranks arrive.
	if stops >= 16 {
		t.Fatalf("%d stop events for 16 ranks: nothing merged", stops)
	}
}

func TestLostSubtree(t *testing.T) {
	tt := startTree(t, 16, 0, "ring")
	// Server 0 has children 2, 4, 8 (and their subtrees) in the binomial
	// tree of 16: killing it loses the even ranks.
	var want wire.Builder
	routing.Tree{Size: 16}.Walk(0, want.Add)
	start := time.Now()
	tt.cancels[0]()
	var lost wire.RankSet
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	for !lost.Equal(want.Set()) {
		ev, err := tt.session.NextEvent(ctx)
		if err != nil {
			t.Fatalf("lost %v within 2s, want %v: %v", lost, want.Set(), err)
		}
		if ev.Op == wire.EventLost {
			lost = lost.Union(ev.Group.Ranks)
		}
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("loss noticed after %v", d)
	}
	groups := tt.command(wire.All(16), wire.OpStatus, nil, 5*time.Second)
	var ok, gone wire.RankSet
	for _, g := range groups {
		switch g.Status {
		case wire.StatusOK:
			ok = ok.Union(g.Ranks)
		case wire.StatusLost:
			gone = gone.Union(g.Ranks)
		}
	}
	if !gone.Equal(want.Set()) || !ok.Equal(wire.All(16).Minus(want.Set())) {
		t.Fatalf("after losing server 0: %s", describe(groups))
	}
}

func TestWrongKeyMasterIsRefused(t *testing.T) {
	ln, err := client.Listen("127.0.0.1:0", wire.LinkConfig{Key: testKey(1)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	tr := routing.Tree{Size: 1}
	l, _ := net.Listen("tcp", "127.0.0.1:0")
	node, err := sdm.New(sdm.Config{Index: 1, Tree: tr, Listener: l, DialUp: sdm.DialTCP(ln.Addr().String()),
		Link: wire.LinkConfig{Key: testKey(2)}, ConnectTimeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	accepted := make(chan error, 1)
	go func() {
		_, err := ln.Accept(ctx, 1)
		accepted <- err
	}()
	if err := node.Run(context.Background()); !errors.Is(err, wire.ErrAuth) {
		t.Fatalf("master with the wrong key: %v, want ErrAuth", err)
	}
	if err := <-accepted; !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("client accepted a master with the wrong key: %v", err)
	}
}

func backendConfig(rank, size int) backend.Config { return backend.Config{Rank: rank, Size: size} }

// A node that never reaches its parent still stops at once when told to,
// even with children connected and their events waiting to go up.
func TestStopWithoutParent(t *testing.T) {
	tr := routing.Tree{Size: 2}
	listeners := map[int]net.Listener{}
	for id := 0; id <= 2; id++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		listeners[id] = l
	}
	cfg := wire.LinkConfig{Key: testKey(1)}
	nowhere := func(ctx context.Context) (net.Conn, error) { return nil, errors.New("no front end") }
	joins := make(chan string, 2)
	trace := log.New(lineFunc(func(line string) {
		if strings.Contains(line, "joined") {
			joins <- line
		}
	}), "", 0)
	master, err := sdm.New(sdm.Config{Index: 2, Tree: tr, Listener: listeners[2], DialUp: nowhere, Link: cfg, Trace: trace})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- master.Run(ctx) }()
	joined := make(chan struct{})
	var children []context.CancelFunc
	for id := 0; id < 2; id++ {
		node, err := sdm.New(sdm.Config{Index: id, Tree: tr, Listener: listeners[id],
			DialUp: sdm.DialTCP(listeners[2].Addr().String()), Link: cfg, Backends: map[int]backend.Backend{id: sim.New(backendConfig(id, 2))}})
		if err != nil {
			t.Fatal(err)
		}
		cctx, ccancel := context.WithCancel(context.Background())
		children = append(children, ccancel)
		go func() {
			node.Run(cctx)
			joined <- struct{}{}
		}()
	}
	// The children join and send their connected events, which wait at the
	// master for a parent that never comes.
	for range 2 {
		select {
		case <-joins:
		case <-time.After(5 * time.Second):
			t.Fatal("the children did not join within 5s")
		}
	}
	start := time.Now()
	cancel()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the master did not stop within 5s of being cancelled")
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("stopping took %v", d)
	}
	for _, c := range children {
		c()
	}
	for range children {
		<-joined
	}
}

// lineFunc is a log destination that hands each line to a function.
type lineFunc func(string)

func (f lineFunc) Write(p []byte) (int, error) {
	f(string(p))
	return len(p), nil
}

var (
	describe = testenv.Describe
	okRanks  = testenv.OKRanks
)

// A node keeps none of the tree of hosts once it is made: at 100k ranks
// that is megabytes in each of a host's servers.
func TestNodeLetsGoOfTheTree(t *testing.T) {
	entries := make([]routing.Entry, 4)
	for i := range entries {
		entries[i] = routing.Entry{Index: i, Host: "127.0.0.1", Port: 1000 + i}
	}
	table, err := routing.NewTable(entries)
	if err != nil {
		t.Fatal(err)
	}
	tr := routing.NewTree(table, 0, true)
	freed := make(chan struct{})
	runtime.AddCleanup(tr.Hosts, func(ch chan struct{}) { close(ch) }, freed)
	be := sim.New(backendConfig(1, 4))
	defer be.Close()
	node, err := sdm.New(sdm.Config{Index: 1, Tree: tr, DialUp: sdm.DialTCP("127.0.0.1:1"), Backends: map[int]backend.Backend{1: be}})
	if err != nil {
		t.Fatal(err)
	}
	tr = routing.Tree{}
	deadline := time.After(10 * time.Second)
	for done := false; !done; {
		runtime.GC()
		select {
		case <-freed:
			done = true
		case <-deadline:
			t.Fatal("the tree of hosts is still reachable 10 s after the node was made")
		case <-time.After(10 * time.Millisecond): // the next collection; a cleanup runs after one
		}
	}
	runtime.KeepAlive(node)
}

// A server is told once that it has joined its parent, the master too,
// and not again at its commands (a rank server collects then what a large
// start left).
func TestJoinedOnce(t *testing.T) {
	const n = 6
	joined := make(chan int, 100)
	tt := launchTree(t, n, 2, func(c *sdm.Config) {
		id := c.Index
		c.Joined = func() { joined <- id }
	}, func(id int) backend.Backend { return sim.New(backendConfig(id, n)) })
	got := map[int]int{}
	deadline := time.After(10 * time.Second)
	for range n + 1 {
		select {
		case id := <-joined:
			got[id]++
		case <-deadline:
			t.Fatalf("joins told after 10 s: %v, want one for each of %d nodes", got, n+1)
		}
	}
	tt.command(wire.All(n), wire.OpStart, wire.MustEncode(wire.Start{Program: "ring"}), 5*time.Second)
	tt.command(wire.All(n), wire.OpWhere, nil, 5*time.Second)
	select {
	case id := <-joined:
		got[id]++
	default:
	}
	for id := 0; id <= n; id++ {
		if got[id] != 1 {
			t.Errorf("node %d told of %d joins, want 1 (all: %v)", id, got[id], got)
		}
	}
}

// A server is told after each answer it sends up (a rank server trims
// itself once those stop for a while).
func TestAfterAnswerFollowsEachAnswer(t *testing.T) {
	const n, commands = 6, 4
	answered := make(chan int, 100)
	tt := launchTree(t, n, 2, func(c *sdm.Config) {
		id := c.Index
		c.AfterAnswer = func() { answered <- id }
	}, func(id int) backend.Backend { return sim.New(backendConfig(id, n)) })
	tt.command(wire.All(n), wire.OpStart, wire.MustEncode(wire.Start{Program: "ring"}), 5*time.Second)
	for range commands - 1 {
		tt.command(wire.All(n), wire.OpWhere, nil, 5*time.Second)
	}
	// Every node answers each command, the master too.
	got := map[int]int{}
	deadline := time.After(10 * time.Second)
	for range (n + 1) * commands {
		select {
		case id := <-answered:
			got[id]++
		case <-deadline:
			t.Fatalf("answers told after 10 s: %v, want %d for each node", got, commands)
		}
	}
	for id := 0; id <= n; id++ {
		if got[id] != commands {
			t.Errorf("node %d told of %d answers, want %d (all: %v)", id, got[id], commands, got)
		}
	}
}
