package integration

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sdm-hpc/sdm/backend"
	"github.com/sdm-hpc/sdm/console"
	"github.com/sdm-hpc/sdm/launcher"
	"github.com/sdm-hpc/sdm/op"
	"github.com/sdm-hpc/sdm/testkit/testenv"
	"github.com/sdm-hpc/sdm/wire"
)

// hungRing launches n Open MPI ranks of examples/pending ring (each sends
// the next a message too big to be buffered) with the queue library,
// under the default lazy gdb, and returns once every rank's queue says
// it waits in MPI_Send.
func hungRing(ctx context.Context, tb testing.TB, n int) *launcher.Session {
	testenv.RequireTool(tb, "mpirun.openmpi", "mpirun")
	bin := testenv.Examples(tb)
	all := wire.All(n)
	prog := filepath.Join(bin, "pending")
	s, err := launcher.Launch(ctx, launcher.Options{RM: "openmpi", Size: n, Debugger: backend.GDB, GDB: backend.Lazy, SDM: sdmBin,
		Program: prog, Queues: true, LauncherArgs: []string{"--oversubscribe"}, ConnectTimeout: 3 * time.Minute})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { s.End(30 * time.Second) })
	if err := s.Load(ctx, []string{prog, "ring"}, nil, "", true, 2*time.Minute); err != nil {
		tb.Fatal(err)
	}
	if g, err := s.Command(ctx, all, wire.OpRun, nil, 2*time.Minute); err != nil || !okRanks(g).Equal(all) {
		tb.Fatalf("run: %s %v", describe(g), err)
	}
	deadline := time.Now().Add(2 * time.Minute)
	for {
		groups, err := s.Command(ctx, all, wire.OpQueues, nil, time.Minute)
		if err != nil {
			tb.Fatal(err)
		}
		var sending wire.RankSet
		for _, g := range groups {
			if q, err := op.Queues.DecodeAnswer(g.Body); g.Status == wire.StatusOK && err == nil && len(q.Ops) > 0 && q.Ops[0].Call == "MPI_Send" {
				sending = sending.Union(g.Ranks)
			}
		}
		if sending.Equal(all) {
			return s
		}
		if time.Now().After(deadline) {
			tb.Fatalf("ranks in MPI_Send after 2 minutes: %v; queues: %s", sending, describe(groups))
		}
		time.Sleep(100 * time.Millisecond) // the ranks tell no one when they block
	}
}

// BenchmarkDeadlock64 is deadlock on a hung job of 64 Open MPI ranks
// (examples/pending ring: each sends the next a message too big to be
// buffered), under the default lazy gdb, from the command to the printed
// diagnosis: the stacks sampled, the queues read, the graph's cycle.
func BenchmarkDeadlock64(b *testing.B) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	s := hungRing(ctx, b, 64)
	b.ResetTimer()
	for range b.N {
		var out strings.Builder
		c := console.New(s, &out, console.Options{Timeout: time.Minute})
		if err := c.Exec(ctx, "deadlock"); err != nil {
			b.Fatal(err)
		}
		if want := "deadlock: a cycle of 64 ranks: ranks 0-63 each wait in MPI_Send to rank+1"; !strings.Contains(out.String(), want) {
			b.Fatalf("no %q in:\n%s", want, out.String())
		}
	}
}
