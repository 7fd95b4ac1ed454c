package integration

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/sdm-hpc/sdm/launcher"
	"github.com/sdm-hpc/sdm/testkit/testenv"
	"github.com/sdm-hpc/sdm/wire"
)

// BenchmarkMPIR measures the time to acquire a job of Open MPI's mpirun
// through MPIR until every rank is held by its gdb (ms-acquired): launched
// under MPIR (examples/ring, held in MPI_Init), and attached by pid to a
// running job of examples/hang. Next to it, wrapped launch of the same
// ring: to every rank's program loaded in gdb (ms-ready), and to every
// rank stopped at main, its libraries loaded as an acquired rank's are
// (ms-at-main).
func BenchmarkMPIR(b *testing.B) {
	bin := testenv.Examples(b)
	testenv.RequireTool(b, "gdb")
	mpirun := testenv.RequireTool(b, "mpirun.openmpi", "mpirun")
	for _, n := range []int{8, 32} {
		b.Run(fmt.Sprintf("mode=wrapped/ranks=%d", n), func(b *testing.B) {
			c := adapter{rm: "openmpi", program: "ring", args: []string{"--oversubscribe"}}
			all := wire.All(n)
			for b.Loop() {
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
				o := c.options(bin, n)
				t0 := time.Now()
				s, err := launcher.Launch(ctx, o)
				if err != nil {
					b.Fatal(err)
				}
				start := wire.MustEncode(wire.Start{Program: o.Program})
				if g := command(b, s.Command, all, wire.OpStart, start); !okRanks(g).Equal(all) {
					b.Fatalf("start: %s", describe(g))
				}
				b.ReportMetric(float64(time.Since(t0).Milliseconds()), "ms-ready")
				command(b, s.Command, all, wire.OpBreak, wire.MustEncode(wire.Break{Location: "main"}))
				command(b, s.Command, all, wire.OpRun, nil)
				stoppedAll(b, s.Session, all)
				b.ReportMetric(float64(time.Since(t0).Milliseconds()), "ms-at-main")
				b.StopTimer()
				command(b, s.Command, all, wire.OpKill, nil)
				if err := s.End(30 * time.Second); err != nil {
					b.Fatal(err)
				}
				cancel()
				b.StartTimer()
			}
		})
		b.Run(fmt.Sprintf("mode=launch/ranks=%d", n), func(b *testing.B) {
			for b.Loop() {
				o := mpirOptions()
				o.RM, o.Size, o.LauncherArgs = "openmpi", n, []string{"--oversubscribe"}
				s, d := benchAcquire(b, o, launcher.MPIR{Argv: []string{filepath.Join(bin, "ring")}})
				b.ReportMetric(float64(d.Milliseconds()), "ms-acquired")
				b.StopTimer()
				command(b, s.Command, wire.All(n), wire.OpKill, nil)
				if err := s.End(30 * time.Second); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
		})
		b.Run(fmt.Sprintf("mode=attach/ranks=%d", n), func(b *testing.B) {
			for b.Loop() {
				b.StopTimer()
				p, pid := detached(b, []string{"OMPI_MPIR_DO_NOT_WARN=1"}, mpirun, "--allow-run-as-root", "--oversubscribe", "-np", strconv.Itoa(n), filepath.Join(bin, "hang"))
				p.lines(b, n, "rank ")
				b.StartTimer()
				s, d := benchAcquire(b, mpirOptions(), launcher.MPIR{Pid: pid})
				b.ReportMetric(float64(d.Milliseconds()), "ms-acquired")
				b.StopTimer()
				if err := s.End(30 * time.Second); err != nil {
					b.Fatal(err)
				}
				// mpirun ends its ranks when told to stop.
				syscall.Kill(pid, syscall.SIGTERM)
				select {
				case <-p.done:
				case <-time.After(30 * time.Second):
					b.Fatalf("mpirun %d did not end within 30 s of SIGTERM", pid)
				}
				b.StartTimer()
			}
		})
	}
}

// benchAcquire acquires a job and says how long it took.
func benchAcquire(b *testing.B, o launcher.Options, m launcher.MPIR) (*launcher.Session, time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	t0 := time.Now()
	s, acq, err := launcher.Acquire(ctx, o, m)
	d := time.Since(t0)
	if err != nil {
		b.Fatal(err)
	}
	if !acq.Ranks.Equal(wire.All(len(acq.Table.Procs))) {
		b.Fatalf("acquired %v of %d ranks", acq.Ranks, len(acq.Table.Procs))
	}
	return s, d
}
