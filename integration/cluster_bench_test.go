package integration

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sdm-hpc/sdm/backend"
	"github.com/sdm-hpc/sdm/launcher"
	"github.com/sdm-hpc/sdm/testkit/testenv"
	"github.com/sdm-hpc/sdm/wire"
)

// BenchmarkAcrossHosts measures, under mpirun on the emulated cluster, the
// bring-up (launch to the first broadcast answered by every rank: ms/up,
// of the last round) and the broadcast round trip (where to every rank:
// ms-median of 20 per round, over all rounds) of simulated ranks on one
// host (h1) and spread over the four, and the stacks of real gdb ranks
// (break, run to it, then where: ms-stacks, of the last round).
func BenchmarkAcrossHosts(b *testing.B) {
	c := testenv.StartCluster(b)
	bin := testenv.Examples(b)
	spread := func(n, hosts int) string {
		var h []string
		for i := range hosts {
			h = append(h, fmt.Sprintf("%s:%d", c.Hosts[i], n/hosts))
		}
		return strings.Join(h, ",")
	}
	options := func(n, hosts int, debugger backend.Debugger) launcher.Options {
		o := launcher.Options{RM: "openmpi", Size: n, Debugger: debugger, SDM: sdmBin, ConnectTimeout: 2 * time.Minute,
			LauncherArgs: []string{"--allow-run-as-root", "--mca", "plm_rsh_agent", c.RSH, "--host", spread(n, hosts)}}
		if debugger == "gdb-mi" {
			o.GDB, o.Program = "eager", filepath.Join(bin, "ring")
		}
		return o
	}
	for _, n := range []int{64, 256} {
		for _, hosts := range []int{1, 4} {
			b.Run(fmt.Sprintf("sim/ranks=%d/hosts=%d", n, hosts), func(b *testing.B) {
				var rtts []time.Duration
				for b.Loop() {
					ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
					start := time.Now()
					s, err := launcher.Launch(ctx, options(n, hosts, "sim"))
					if err != nil {
						b.Fatal(err)
					}
					groups, err := s.Command(ctx, wire.All(n), wire.OpStatus, nil, time.Minute)
					if err != nil || !okRanks(groups).Equal(wire.All(n)) {
						b.Fatalf("first broadcast: %s %v", describe(groups), err)
					}
					b.ReportMetric(float64(time.Since(start).Milliseconds()), "ms/up")
					command(b, s.Command, wire.All(n), wire.OpStart, wire.MustEncode(wire.Start{Program: "hang", Args: []string{"3"}}))
					for range 20 {
						t0 := time.Now()
						if g, err := s.Command(ctx, wire.All(n), wire.OpWhere, nil, time.Minute); err != nil || !okRanks(g).Equal(wire.All(n)) {
							b.Fatalf("where: %s %v", describe(g), err)
						}
						rtts = append(rtts, time.Since(t0))
					}
					s.End(time.Minute)
					cancel()
				}
				slices.Sort(rtts)
				b.ReportMetric(float64(rtts[len(rtts)/2].Microseconds())/1000, "ms-median")
			})
		}
	}
	const n = 32
	for _, hosts := range []int{1, 4} {
		b.Run(fmt.Sprintf("gdb/ranks=%d/hosts=%d", n, hosts), func(b *testing.B) {
			for b.Loop() {
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
				s, err := launcher.Launch(ctx, options(n, hosts, "gdb-mi"))
				if err != nil {
					b.Fatal(err)
				}
				all := wire.All(n)
				command(b, s.Command, all, wire.OpStart, wire.MustEncode(wire.Start{Program: filepath.Join(bin, "ring")}))
				command(b, s.Command, all, wire.OpBreak, wire.MustEncode(wire.Break{Location: "pass"}))
				command(b, s.Command, all, wire.OpRun, nil)
				stoppedAll(b, s.Session, all)
				t0 := time.Now()
				if g, err := s.Command(ctx, all, wire.OpWhere, nil, time.Minute); err != nil || !okRanks(g).Equal(all) {
					b.Fatalf("where: %s %v", describe(g), err)
				}
				b.ReportMetric(float64(time.Since(t0).Microseconds())/1000, "ms-stacks")
				s.End(time.Minute)
				cancel()
			}
		})
	}
}
