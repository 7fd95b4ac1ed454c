package client_test

import (
	"context"
	"errors"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sdm-hpc/sdm/backend/sim"
	"github.com/sdm-hpc/sdm/client"
	"github.com/sdm-hpc/sdm/testkit/simtree"
	"github.com/sdm-hpc/sdm/testkit/testenv"
	"github.com/sdm-hpc/sdm/wire"
)

var (
	describe = testenv.Describe
	okRanks  = testenv.OKRanks
)

// deadline bounds each wait of these tests for an answer or an event.
const deadline = 10 * time.Second

func ready(t *testing.T, size, fanout int, program string, args ...string) *simtree.Tree {
	t.Helper()
	tt := simtree.Start(t, simtree.Options{Size: size, Fanout: fanout})
	tt.Ready(program, args...)
	return tt
}

func command(t *testing.T, s interface {
	Command(context.Context, wire.RankSet, string, []byte, time.Duration) ([]wire.Group, error)
}, ranks wire.RankSet, op string, body []byte) []wire.Group {
	t.Helper()
	groups, err := s.Command(context.Background(), ranks, op, body, deadline)
	if err != nil {
		t.Fatalf("%s %v: %v", op, ranks, err)
	}
	return groups
}

// A command reaches the ranks of its set and no other, in every tree
// shape: each rank's answer comes back once, from the ranks asked.
func TestCommandGoesToItsRanks(t *testing.T) {
	for _, fanout := range []int{0, 2} {
		tt := ready(t, 12, fanout, "hang", "5")
		cases := []struct {
			ranks wire.RankSet
			want  string
		}{
			{wire.Single(5), "[5] ok compute; "},
			{wire.Single(11), "[11] ok MPI_Recv; "},
			{wire.Range(4, 6), "[4,6] ok MPI_Recv; [5] ok compute; "},
			{wire.Single(0).Union(wire.Range(5, 5)).Union(wire.Single(9)), "[0,9] ok MPI_Recv; [5] ok compute; "},
			{wire.Range(10, 14), "[10-11] ok MPI_Recv; [12-14] no such rank: "},
		}
		for _, c := range cases {
			got := describe(command(t, tt.Session, c.ranks, wire.OpWhere, nil))
			if !strings.HasPrefix(got, c.want) {
				t.Errorf("fanout %d: where %v = %q, want %q", fanout, c.ranks, got, c.want)
			}
		}
	}
}

// Identical answers merge into one group whatever subtrees they come
// from; groups come ordered by their lowest rank.
func TestAnswersMergeByRanks(t *testing.T) {
	tt := ready(t, 9, 0, "groups", "3")
	groups := command(t, tt.Session, wire.All(9), wire.OpWhere, nil)
	want := []wire.RankSet{mustSet(t, "0,3,6"), mustSet(t, "1,4,7"), mustSet(t, "2,5,8")}
	if len(groups) != len(want) {
		t.Fatalf("where on 3 groups of ranks: %s", describe(groups))
	}
	for i, g := range groups {
		if g.Status != wire.StatusOK || !g.Ranks.Equal(want[i]) {
			t.Errorf("group %d: %s, want ranks %v ok", i, describe(groups[i:i+1]), want[i])
		}
	}
}

func mustSet(t *testing.T, text string) wire.RankSet {
	t.Helper()
	s, err := wire.ParseRankSet(text)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// Ranks that do not answer by the deadline come back as a timeout group,
// and ranks whose server was stopped as a lost group with the reason, in
// one answer.
func TestTimeoutAndLostGroups(t *testing.T) {
	const n, victim = 8, 7 // 7 is a leaf of the binomial tree of 8
	tt := ready(t, n, 0, "ring")
	tt.Stop(victim)
	waitLost(t, tt.Session, wire.Single(victim))
	if _, lost := tt.Session.Connected(); !lost.Equal(wire.Single(victim)) {
		t.Errorf("Connected says lost %v, want %v", lost, victim)
	}
	sleep := wire.MustEncode(5 * time.Second)
	groups, err := tt.Session.Command(context.Background(), wire.All(n), sim.OpSleep, sleep, 300*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	var timedOut, lost wire.RankSet
	for _, g := range groups {
		switch g.Status {
		case wire.StatusTimeout:
			timedOut = timedOut.Union(g.Ranks)
		case wire.StatusLost:
			lost = lost.Union(g.Ranks)
			if len(g.Body) == 0 {
				t.Errorf("lost group without a reason: %s", describe(groups))
			}
		default:
			t.Errorf("unexpected group in %s", describe(groups))
		}
	}
	if !timedOut.Equal(wire.Range(0, n-2)) || !lost.Equal(wire.Single(victim)) {
		t.Fatalf("a sleep past the deadline with rank %d gone: %s", victim, describe(groups))
	}
}

// waitLost reads events until the ranks of want are all reported lost.
func waitLost(t *testing.T, s *client.Session, want wire.RankSet) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	var lost wire.RankSet
	for !lost.Equal(want) {
		ev, err := s.NextEvent(ctx)
		if err != nil {
			t.Fatalf("lost %v, want %v: %v", lost, want, err)
		}
		if ev.Op == wire.EventLost {
			lost = lost.Union(ev.Group.Ranks)
		}
	}
}

// cutDial lets a node dial its parent once; once cut, its connection is
// closed under it and every new attempt fails, as when its host drops off
// the network.
type cutDial struct {
	mu   sync.Mutex
	conn net.Conn
	cut  bool
}

func (c *cutDial) wrap(dial simtree.Dialer) simtree.Dialer {
	return func(ctx context.Context) (net.Conn, error) {
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.cut {
			return nil, errors.New("network unreachable")
		}
		conn, err := dial(ctx)
		c.conn = conn
		return conn, err
	}
}

func (c *cutDial) cutNow() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.cut = true
	c.conn.Close()
}

// A server whose link is cut and cannot come back is lost with its
// subtree; the others still answer.
func TestCutLinkAnswersLost(t *testing.T) {
	const n, victim = 8, 3 // 3 is a leaf of the binomial tree of 8
	var cut cutDial
	tt := simtree.Start(t, simtree.Options{Size: n, Wrap: func(id int, dial simtree.Dialer) simtree.Dialer {
		if id == victim {
			return cut.wrap(dial)
		}
		return dial
	}})
	tt.Ready("ring")
	cut.cutNow()
	waitLost(t, tt.Session, wire.Single(victim))
	groups := command(t, tt.Session, wire.All(n), wire.OpStatus, nil)
	var ok, lost wire.RankSet
	for _, g := range groups {
		switch g.Status {
		case wire.StatusOK:
			ok = ok.Union(g.Ranks)
		case wire.StatusLost:
			lost = lost.Union(g.Ranks)
		}
	}
	if !lost.Equal(wire.Single(victim)) || !ok.Equal(wire.All(n).Minus(lost)) {
		t.Fatalf("status with rank %d cut off: %s", victim, describe(groups))
	}
}

// WaitConnected gives up at its deadline and names the ranks that never
// joined; progress was told how many did.
func TestWaitConnectedFailsAtDeadline(t *testing.T) {
	tt := simtree.Start(t, simtree.Options{Size: 4, Absent: []int{3}})
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	var mu sync.Mutex
	most := 0
	err := tt.Session.WaitConnected(ctx, func(connected, total int) {
		mu.Lock()
		defer mu.Unlock()
		most = max(most, connected)
		if total != 4 {
			t.Errorf("progress total %d, want 4", total)
		}
	})
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "still waiting for ranks 3") {
		t.Fatalf("WaitConnected without rank 3: %v", err)
	}
	if most > 3 {
		t.Errorf("progress reported %d of 4 connected", most)
	}
}

// A rank lost while the others connect ends the wait at once, long
// before its deadline, naming the rank.
func TestWaitConnectedFailsOnLoss(t *testing.T) {
	tt := simtree.Start(t, simtree.Options{Size: 4, Absent: []int{3}})
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	for {
		connected, _ := tt.Session.Connected()
		if connected.Contains(1) {
			break
		}
		if _, err := tt.Session.NextEvent(ctx); err != nil {
			t.Fatalf("rank 1 did not join: %v", err)
		}
	}
	tt.Stop(1)
	err := tt.Session.WaitConnected(ctx, nil)
	if err == nil || ctx.Err() != nil || !strings.Contains(err.Error(), "ranks 1 lost") {
		t.Fatalf("WaitConnected after rank 1 was lost: %v", err)
	}
}

// Quit is answered by every rank, ends every node and then the session:
// the events are read to their end, and later commands fail with
// ErrClosed.
func TestQuitEndsTreeAndSession(t *testing.T) {
	const n = 6
	tt := ready(t, n, 0, "ring")
	groups, err := tt.Session.Quit(context.Background(), deadline)
	if err != nil || len(groups) != 1 || groups[0].Status != wire.StatusOK || !groups[0].Ranks.Equal(wire.All(n)) {
		t.Fatalf("quit: %s %v", describe(groups), err)
	}
	for id := 0; id <= n; id++ {
		if err := tt.Ended(id); err != nil {
			t.Errorf("node %d after quit: %v", id, err)
		}
	}
	select {
	case <-tt.Session.Done():
	case <-time.After(deadline):
		t.Fatal("the session did not end after quit")
	}
	drain(t, tt.Session)
	if _, err := tt.Session.Command(context.Background(), wire.All(n), wire.OpStatus, nil, time.Second); !errors.Is(err, client.ErrClosed) {
		t.Fatalf("command after quit: %v, want ErrClosed", err)
	}
}

// Each rank's events reach the session in the order the rank sent them:
// running, stopped, running, stopped for two runs.
func TestEventsArriveInOrder(t *testing.T) {
	const n = 8
	tt := ready(t, n, 3, "ring")
	seen := make(map[int][]string)
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	for _, op := range []string{wire.OpRun, wire.OpCont} {
		if g := command(t, tt.Session, wire.All(n), op, nil); len(g) != 1 || g[0].Status != wire.StatusOK {
			t.Fatalf("%s: %s", op, describe(g))
		}
		var stopped wire.RankSet
		for !stopped.Equal(wire.All(n)) {
			ev, err := tt.Session.NextEvent(ctx)
			if err != nil {
				t.Fatalf("after %s, only %v stopped: %v", op, stopped, err)
			}
			if ev.Op != wire.EventRunning && ev.Op != wire.EventStopped {
				continue
			}
			ev.Group.Ranks.Each(func(r int) bool {
				seen[r] = append(seen[r], ev.Op)
				return true
			})
			if ev.Op == wire.EventStopped {
				stopped = stopped.Union(ev.Group.Ranks)
			}
		}
	}
	want := strings.Join([]string{wire.EventRunning, wire.EventStopped, wire.EventRunning, wire.EventStopped}, " ")
	for r := range n {
		if got := strings.Join(seen[r], " "); got != want {
			t.Errorf("rank %d events: %s, want %s", r, got, want)
		}
	}
}

// A message too large to send fails at once, not at its deadline, and
// the session goes on.
func TestTooLargeCommandFailsAtOnce(t *testing.T) {
	tt := ready(t, 2, 0, "ring")
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	huge := make([]byte, wire.DefaultMaxFrame+1)
	_, err := tt.Session.Command(ctx, wire.All(2), wire.OpRaw, huge, time.Hour)
	if !errors.Is(err, wire.ErrFrameTooLarge) {
		t.Fatalf("a command of %d bytes: %v, want ErrFrameTooLarge", len(huge), err)
	}
	if ctx.Err() != nil {
		t.Fatalf("a command that was never sent waited %v for an answer", deadline)
	}
	if g := command(t, tt.Session, wire.All(2), wire.OpStatus, nil); !testenv.OKRanks(g).Equal(wire.All(2)) {
		t.Fatalf("status after a failed send: %s", describe(g))
	}
}

// Commands that could not be sent anywhere are refused before sending.
func TestCommandRefusesBadArguments(t *testing.T) {
	tt := ready(t, 2, 0, "ring")
	if _, err := tt.Session.Command(context.Background(), wire.RankSet{}, wire.OpStatus, nil, time.Second); err == nil {
		t.Error("a command to no rank was sent")
	}
	if _, err := tt.Session.Command(context.Background(), wire.All(2), wire.OpStatus, nil, 0); err == nil {
		t.Error("a command without a timeout was sent")
	}
	tt.Session.Close()
	if _, err := tt.Session.Command(context.Background(), wire.All(2), wire.OpStatus, nil, time.Second); !errors.Is(err, client.ErrClosed) {
		t.Errorf("command on a closed session: %v, want ErrClosed", err)
	}
}
