package integration

import (
	"context"
	"testing"
	"time"

	"github.com/sdm-hpc/sdm/client"
	"github.com/sdm-hpc/sdm/console"
	"github.com/sdm-hpc/sdm/wire"
)

// Two jobs joined: ranks follow one another, a command is split by job
// and its answers merged back, ranks beyond both are no ranks, and the
// stack tree spans the jobs.
func TestJoined(t *testing.T) {
	a, b := launch(t, 3, 0, "hang"), launch(t, 5, 0, "hang")
	j := client.NewJoined()
	defer j.Close()
	if first, err := j.Add(a.Session.Session); err != nil || first != 0 {
		t.Fatalf("first job at %d: %v", first, err)
	}
	if first, err := j.Add(b.Session.Session); err != nil || first != 3 || j.Size() != 8 {
		t.Fatalf("second job at %d, size %d: %v", first, j.Size(), err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	groups, err := j.Command(ctx, wire.All(9), wire.OpWhere, nil, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	roots, err := console.BuildStackTree(groups[:len(groups)-1])
	if err != nil {
		t.Fatal(err)
	}
	// In each job its last rank spins in compute; the others wait.
	stuck, waiting := findFrame(roots, "compute"), findFrame(roots, "MPI_Recv")
	if stuck == nil || stuck.Ranks.String() != "2,7" || waiting == nil || waiting.Ranks.String() != "0-1,3-6" {
		t.Fatalf("stack tree over the jobs: %s\n%s", describe(groups), console.DOT(roots))
	}
	if last := groups[len(groups)-1]; last.Status != wire.StatusNoRank || last.Ranks.String() != "8" {
		t.Fatalf("rank 8: %s", describe(groups))
	}
	// A job that ended answers for its ranks with the reason.
	b.end()
	groups, _ = j.Command(ctx, wire.Range(2, 3), wire.OpWhere, nil, 10*time.Second)
	var failed wire.RankSet
	for _, g := range groups {
		if g.Status != wire.StatusOK {
			failed = failed.Union(g.Ranks)
		}
	}
	if failed.String() != "3" || !okRanks(groups).Equal(wire.Single(2)) {
		t.Fatalf("after the second job ended: %s", describe(groups))
	}
}
