package integration

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sdm-hpc/sdm/client"
	"github.com/sdm-hpc/sdm/rm/local"
	"github.com/sdm-hpc/sdm/routing"
	"github.com/sdm-hpc/sdm/testkit/testenv"
	"github.com/sdm-hpc/sdm/wire"
)

// subtree is the ranks of server index's subtree in a binomial tree of n.
func subtree(n, index int) wire.RankSet {
	var b wire.Builder
	routing.Tree{Size: n}.Walk(index, b.Add)
	return b.Set()
}

// groupsWith is the union of the ranks of the groups with status.
func groupsWith(groups []wire.Group, status wire.Status) wire.RankSet {
	var r wire.RankSet
	for _, g := range groups {
		if g.Status == status {
			r = r.Union(g.Ranks)
		}
	}
	return r
}

// A stopped interior server holds up no command beyond its deadline and
// no command to the other ranks at all; woken, its ranks answer again as
// they were. In the tree of hosts a stopped member that serves its rank
// (its local link pings only while an answer is due) stalls its own rank
// alone; one that handed its rank over stalls nothing.
func TestStoppedServerStallsNobody(t *testing.T) {
	t.Run("tree=ranks", func(t *testing.T) {
		stoppedServer(t, launchRanks(t, 16, 0, "ring"), 16, 1, subtree(16, 1))
	})
	t.Run("tree=hosts,members=serve", func(t *testing.T) {
		stoppedServer(t, launchServing(t, 16, "ring"), 16, 5, wire.Single(5))
	})
	t.Run("tree=hosts,members=hand", func(t *testing.T) {
		stoppedServer(t, launch(t, 16, 0, "ring"), 16, 5, wire.RankSet{})
	})
}

// stoppedServer stops server victim of s, whose n ranks run ring, and
// checks that the ranks stalled alone wait for it, and only as long as
// a command's deadline.
func stoppedServer(t *testing.T, s *job, n, victim int, stalled wire.RankSet) {
	others := wire.All(n).Minus(stalled)
	before := describe(command(t, s.Command, wire.All(n), wire.OpWhere, nil))
	server := s.Job.(*local.Job).Process(victim)
	if err := server.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	testenv.WaitStopped(t, server.Pid)
	woken := false
	defer func() {
		if !woken {
			server.Signal(syscall.SIGCONT)
		}
	}()

	// The command that is in flight when the server stops: answered by
	// its deadline, the subtree marked, the others ok.
	const deadline = 2 * time.Second
	start := time.Now()
	groups, err := s.Command(context.Background(), wire.All(n), wire.OpStatus, nil, deadline)
	if err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > deadline+500*time.Millisecond {
		t.Fatalf("a command with a deadline of %v took %v", deadline, d)
	}
	named := strings.Contains(describe(groups), fmt.Sprintf("server %d on ", victim)) && strings.Contains(describe(groups), " not responding")
	if !groupsWith(groups, wire.StatusTimeout).Equal(stalled) || !okRanks(groups).Equal(others) || named == stalled.Empty() {
		t.Fatalf("status of all with server %d stopped: %s", victim, describe(groups))
	}

	// The others answer without waiting for the stopped server, again
	// and again: no command waits behind one that cannot go down.
	for range 10 {
		start := time.Now()
		groups := command(t, s.Command, others, wire.OpStatus, nil)
		if !okRanks(groups).Equal(others) {
			t.Fatalf("status of the others: %s", describe(groups))
		}
		if d := time.Since(start); d > time.Second {
			t.Fatalf("status of the ranks that were not stopped took %v", d)
		}
	}

	// Found not responding, then woken: the subtree answers again, from
	// where it was.
	if !stalled.Empty() {
		waitLogged(t, filepath.Join(s.Dir, "servers.log"), fmt.Sprintf("server %d not responding", victim))
	}
	if err := server.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	woken = true
	// The first command after waking is answered by the woken subtree,
	// not with a stale "not responding" until its parent looks again.
	groups = command(t, s.Command, wire.All(n), wire.OpWhere, nil)
	if got := describe(groups); got != before {
		t.Fatalf("where at once after waking: %s, before the stop: %s", got, before)
	}
}

// waitLogged waits until the file at path holds text.
func waitLogged(t testing.TB, path, text string) { t.Helper(); waitLoggedN(t, path, text, 1) }

// waitLoggedN waits until the file at path holds text n times.
func waitLoggedN(t testing.TB, path, text string, n int) {
	t.Helper()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(60 * time.Second)
	for {
		if data, _ := os.ReadFile(path); strings.Count(string(data), text) >= n {
			return
		}
		select {
		case <-tick.C:
		case <-deadline:
			data, _ := os.ReadFile(path)
			t.Fatalf("%s does not say %q %d times within 60 s:\n%s", path, text, n, data)
		}
	}
}

// A killed interior server's subtree is reported lost once, as a closed
// connection, and the servers below it, orphaned, end.
func TestKilledServerLostOnce(t *testing.T) {
	const n, victim = 16, 1
	s := launchRanks(t, n, 0, "ring")
	job := s.Job.(*local.Job)
	lost := subtree(n, victim)
	killLostOnce(t, s, victim, lost)
	// The orphans end: each finds its parent gone when it dials again.
	orphansEnd(t, job, lost.Minus(wire.Single(victim)), "its parent")
	// Whatever came since is news of other things: nothing more is lost.
	groups := command(t, s.Command, wire.All(n), wire.OpStatus, nil)
	if !groupsWith(groups, wire.StatusLost).Equal(lost) {
		t.Fatalf("status after the loss: %s", describe(groups))
	}
	drained, stop := context.WithCancel(context.Background())
	stop()
	for {
		ev, err := s.NextEvent(drained)
		if err != nil {
			break
		}
		if ev.Op == wire.EventLost {
			t.Fatalf("loss reported again: %s %s", ev.Group.Ranks, ev.Group.Body)
		}
	}
	s.end()
}

// waitTick waits a little, or until ctx ends: the pace of polling a
// process that has no other way to say it ended.
func waitTick(ctx context.Context) {
	t := time.NewTimer(20 * time.Millisecond)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// A hung gdb holds up only its own rank (its ranks, when ranks share
// gdbs): its commands time out, the others' answer at once.
func TestHungGDBDelaysOnlyItsRank(t *testing.T) {
	const n = 4
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	s, gdb, per := plainUnderGDB(ctx, t, n, 2)
	if err := syscall.Kill(gdb, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	defer syscall.Kill(gdb, syscall.SIGCONT)
	testenv.WaitStopped(t, gdb)
	// print asks gdb itself, where status is known without it.
	onePlusOne := wire.MustEncode(wire.Expr{Expr: "1+1"})
	const deadline = 2 * time.Second
	groups, err := s.Command(ctx, wire.All(n), wire.OpPrint, onePlusOne, deadline)
	if err != nil {
		t.Fatal(err)
	}
	held := groupsWith(groups, wire.StatusTimeout)
	if held.Count() != per || per == 1 && held.String() != "2" || !okRanks(groups).Equal(wire.All(n).Minus(held)) {
		t.Fatalf("print with a gdb of %d ranks stopped: %s", per, describe(groups))
	}
	others := wire.All(n).Minus(held)
	for range 5 {
		start := time.Now()
		groups := command(t, s.Command, others, wire.OpPrint, onePlusOne)
		if !okRanks(groups).Equal(others) {
			t.Fatalf("print of the others: %s", describe(groups))
		}
		if d := time.Since(start); d > time.Second {
			t.Fatalf("print of the ranks whose gdb runs took %v", d)
		}
	}
}

// In the tree of hosts (all ranks on this one), a killed member loses its
// own rank only; the killed leader loses the host's every other rank, once,
// and its members, orphaned, end.
func TestKilledLeaderLosesItsHost(t *testing.T) {
	const n, member = 16, 5
	s := launch(t, n, 0, "ring")
	job := s.Job.(*local.Job)
	killLostOnce(t, s, member, wire.Single(member))
	groups := command(t, s.Command, wire.All(n), wire.OpStatus, nil)
	if !groupsWith(groups, wire.StatusLost).Equal(wire.Single(member)) || !okRanks(groups).Equal(wire.All(n).Minus(wire.Single(member))) {
		t.Fatalf("status after a member's loss: %s", describe(groups))
	}
	rest := wire.All(n).Minus(wire.Single(member))
	killLostOnce(t, s, 0, rest)
	orphansEnd(t, job, rest.Minus(wire.Single(0)), "its host's leader")
	if groups := command(t, s.Command, wire.All(n), wire.OpStatus, nil); !groupsWith(groups, wire.StatusLost).Equal(wire.All(n)) {
		t.Fatalf("status after the leader's loss: %s", describe(groups))
	}
	s.end()
}

// killLostOnce kills server victim of s and checks that the front end
// hears of the loss of ranks want once, as a closed connection.
func killLostOnce(t *testing.T, s *job, victim int, want wire.RankSet) {
	t.Helper()
	if err := s.Job.(*local.Job).Process(victim).Kill(); err != nil {
		t.Fatal(err)
	}
	var losses []client.Event
	events(t, s.Session.Session, func(ev client.Event) bool {
		if ev.Op == wire.EventLost {
			losses = append(losses, ev)
		}
		return ev.Op == wire.EventLost && ev.Group.Ranks.Equal(want)
	})
	prefix := fmt.Sprintf("connection closed by server %d on ", victim)
	if len(losses) != 1 || !strings.HasPrefix(string(losses[0].Group.Body), prefix) {
		t.Fatalf("loss of server %d reported as %v, want %v once, %q", victim, losses, want, prefix)
	}
}

// orphansEnd checks that the servers of ranks end within 10 s of the
// loss of their parent (named so in errors).
func orphansEnd(t *testing.T, job *local.Job, ranks wire.RankSet, parent string) {
	t.Helper()
	ranks.Each(func(r int) bool {
		p := job.Process(r)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		for p.Signal(syscall.Signal(0)) == nil && ctx.Err() == nil {
			waitTick(ctx)
		}
		if err := p.Signal(syscall.Signal(0)); err == nil {
			t.Errorf("server %d still runs 10s after %s was killed", r, parent)
		}
		return true
	})
}
