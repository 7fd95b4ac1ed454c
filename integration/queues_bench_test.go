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
// the next a message too big to be buffered) with the queue library, or
// without it (queues false: read through Open MPI's own), under the
// default lazy gdb, and returns once every rank's queue says it waits in
// MPI_Send (or has its send posted).
func hungRing(ctx context.Context, tb testing.TB, n int, queues bool) *launcher.Session {
	testenv.RequireTool(tb, "mpirun.openmpi", "mpirun")
	bin := testenv.Examples(tb)
	all := wire.All(n)
	prog := filepath.Join(bin, "pending")
	s, err := launcher.Launch(ctx, launcher.Options{RM: "openmpi", Size: n, Debugger: backend.GDB, GDB: backend.Lazy, SDM: sdmBin,
		Program: prog, Queues: queues, LauncherArgs: []string{"--oversubscribe"}, ConnectTimeout: 3 * time.Minute})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { s.End(30 * time.Second) })
	if err := s.Load(ctx, []string{prog, "ring"}, nil, "", queues, 2*time.Minute); err != nil {
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
			want := "MPI_Send"
			if !queues {
				want = wire.PostedSend
			}
			if q, err := op.Queues.DecodeAnswer(g.Body); g.Status == wire.StatusOK && err == nil && len(q.Ops) > 0 && q.Ops[0].Call == want {
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
// diagnosis: the stacks sampled, the queues read (from sdm's library, or
// through Open MPI's own, one helper per rank, as for a job sdm attached
// to), the graph's cycle.
func BenchmarkDeadlock64(b *testing.B) {
	for _, c := range []struct {
		name   string
		queues bool
	}{{"interposed", true}, {"mpi-library", false}} {
		b.Run(c.name, func(b *testing.B) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
			defer cancel()
			s := hungRing(ctx, b, 64, c.queues)
			b.ResetTimer()
			for range b.N {
				var out strings.Builder
				con := console.New(s, &out, console.Options{Timeout: time.Minute})
				if err := con.Exec(ctx, "deadlock"); err != nil {
					b.Fatal(err)
				}
				if want := "deadlock: a cycle of 64 ranks: ranks 0-63 each wait in MPI_Send to rank+1"; !strings.Contains(out.String(), want) {
					b.Fatalf("no %q in:\n%s", want, out.String())
				}
			}
		})
	}
}
