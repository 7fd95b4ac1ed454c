package integration

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/sdm-hpc/sdm/rm/local"
	"github.com/sdm-hpc/sdm/routing"
	"github.com/sdm-hpc/sdm/wire"
)

// Sixty-four real sdm processes: all join, where merges into the expected
// groups, and killing a server in the middle of the tree loses exactly its
// subtree while the rest keep answering.
func TestSixtyFourServers(t *testing.T) {
	const n = 64
	s := launchRanks(t, n, 0, "groups", "3")
	got := describe(command(t, s.Command, wire.All(n), wire.OpWhere, nil))
	want := "[0,3,6,9,12,15,18,21,24,27,30,33,36,39,42,45,48,51,54,57,60,63] ok work_0_3; " +
		"[1,4,7,10,13,16,19,22,25,28,31,34,37,40,43,46,49,52,55,58,61] ok work_1_3; " +
		"[2,5,8,11,14,17,20,23,26,29,32,35,38,41,44,47,50,53,56,59,62] ok work_2_3; "
	if got != want {
		t.Fatalf("where:\n got %s\nwant %s", got, want)
	}

	// Server 1 sits in the middle of the binomial tree of 64 (one node
	// per rank; TestKilledLeaderLosesItsHost has the tree of hosts): its subtree
	// is every rank r with (r+1) mod 4 == 2.
	const victim = 1
	var sub wire.Builder
	routing.Tree{Size: n}.Walk(victim, sub.Add)
	lostWant := sub.Set()
	if lostWant.Count() < 2 || lostWant.Count() == n {
		t.Fatalf("server %d is not in the middle: subtree %v", victim, lostWant)
	}
	start := time.Now()
	if err := s.Job.(*local.Job).Process(victim).Kill(); err != nil {
		t.Fatal(err)
	}
	var lost wire.RankSet
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	for !lost.Equal(lostWant) {
		ev, err := s.NextEvent(ctx)
		if err != nil {
			t.Fatalf("within 2s lost %v, want %v: %v", lost, lostWant, err)
		}
		if ev.Op == wire.EventLost {
			lost = lost.Union(ev.Group.Ranks)
		}
	}
	t.Logf("subtree of %d reported lost after %v", victim, time.Since(start))
	groups := command(t, s.Command, wire.All(n), wire.OpStatus, nil)
	var gone wire.RankSet
	for _, g := range groups {
		if g.Status == wire.StatusLost {
			gone = gone.Union(g.Ranks)
		}
	}
	if !gone.Equal(lostWant) || !okRanks(groups).Equal(wire.All(n).Minus(lostWant)) {
		t.Fatalf("status after the loss: %s", describe(groups))
	}

	// The end of the session names the servers that failed, cause first:
	// the killed one, then its orphans, and no other.
	err := s.end()
	os.RemoveAll(s.Dir)
	if err == nil {
		t.Fatal("ending a session with a killed server reported no failure")
	}
	wantEnd := fmt.Sprintf("rank %d killed by SIGKILL: ranks %v lost (exit status 1)", victim, lostWant.Minus(wire.Single(victim)))
	if !strings.Contains(err.Error(), wantEnd) {
		t.Errorf("the end of the session: %v\nwant %q", err, wantEnd)
	}
}
