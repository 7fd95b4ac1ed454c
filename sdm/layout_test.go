package sdm_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/sdm-hpc/sdm/backend"
	"github.com/sdm-hpc/sdm/backend/sim"
	"github.com/sdm-hpc/sdm/routing"
	"github.com/sdm-hpc/sdm/sdm"
	"github.com/sdm-hpc/sdm/testkit/simtree"
	"github.com/sdm-hpc/sdm/wire"
)

// hosts is three servers of six ranks, as a job on three hosts acquired
// through MPIR is served: one tree node per host.
var hosts = wire.Layout{wire.Range(0, 2), wire.Range(3, 4), wire.Single(5)}

// A server of several ranks answers for each, merges their answers with
// its children's, and its ranks' events carry each rank.
func TestServerOfSeveralRanks(t *testing.T) {
	tt := simtree.Start(t, simtree.Options{Size: len(hosts), Layout: hosts})
	tt.Ready("hang", "4")
	if n := tt.Session.Size(); n != 6 {
		t.Fatalf("the front end sees %d ranks, want 6", n)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	command := func(ranks wire.RankSet, op string) string {
		t.Helper()
		groups, err := tt.Session.Command(ctx, ranks, op, nil, 5*time.Second)
		if err != nil {
			t.Fatalf("%s: %v", op, err)
		}
		return describe(groups)
	}
	if got, want := command(wire.All(6), wire.OpWhere), "[0-3,5] ok MPI_Recv; [4] ok compute; "; got != want {
		t.Errorf("where = %q, want %q", got, want)
	}
	if got, want := command(wire.Range(1, 4), wire.OpWhere), "[1-3] ok MPI_Recv; [4] ok compute; "; got != want {
		t.Errorf("[1-4] where = %q, want %q", got, want)
	}
	if got := command(wire.Range(4, 9), wire.OpStatus); !strings.Contains(got, "[6-9] no such rank: ") || !strings.Contains(got, "the job has ranks 0-5") {
		t.Errorf("status of 4-9 in a job of 6: %q", got)
	}
	command(wire.All(6), wire.OpRun)
	var stopped wire.RankSet
	for !stopped.Equal(wire.All(6)) {
		ev, err := tt.Session.NextEvent(ctx)
		if err != nil {
			t.Fatalf("only %v stopped: %v", stopped, err)
		}
		if ev.Op == wire.EventStopped {
			stopped = stopped.Union(ev.Group.Ranks)
		}
	}
	tt.Stop(1)
	var lost wire.RankSet
	for !lost.Equal(hosts[1]) {
		ev, err := tt.Session.NextEvent(ctx)
		if err != nil {
			t.Fatalf("lost %v, want %v: %v", lost, hosts[1], err)
		}
		if ev.Op == wire.EventLost {
			lost = lost.Union(ev.Group.Ranks)
		}
	}
}

// A node refuses a layout that does not fit its tree or its backends.
func TestLayoutRefusals(t *testing.T) {
	tree := routing.Tree{Size: 3}
	dial := sdm.DialTCP("127.0.0.1:1")
	be := func(ranks ...int) map[int]backend.Backend {
		m := map[int]backend.Backend{}
		for _, r := range ranks {
			m[r] = sim.New(backend.Config{Rank: r, Size: 6})
		}
		return m
	}
	for _, c := range []struct {
		cfg  sdm.Config
		want string
	}{
		{sdm.Config{Index: 1, Tree: tree, DialUp: dial, Layout: hosts[:2], Backends: be(3, 4)}, "a layout of 2 servers for a tree of 3"},
		{sdm.Config{Index: 1, Tree: tree, DialUp: dial, Layout: wire.Layout{wire.Range(0, 2), wire.Range(2, 4), wire.Single(5)}, Backends: be(3, 4)}, "served twice"},
		{sdm.Config{Index: 1, Tree: tree, DialUp: dial, Layout: hosts, Backends: be(3)}, "serves ranks 3-4 but has 1 backends"},
		{sdm.Config{Index: 1, Tree: tree, DialUp: dial, Layout: hosts, Backends: be(3, 5)}, "a backend for rank 5, which it does not serve"},
		{sdm.Config{Index: 3, Tree: tree, DialUp: dial, Layout: hosts, Backends: be(0)}, "the master has no backend"},
	} {
		if _, err := sdm.New(c.cfg); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("New(index %d, layout %v, %d backends): %v, want %q", c.cfg.Index, c.cfg.Layout, len(c.cfg.Backends), err, c.want)
		}
	}
}
