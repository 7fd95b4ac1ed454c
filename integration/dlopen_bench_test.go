package integration

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sdm-hpc/sdm/internal/testenv"
	"github.com/sdm-hpc/sdm/rm/local"
	"github.com/sdm-hpc/sdm/wire"
)

// BenchmarkDlopen runs examples/dlopen on 8 ranks, each loading 1000
// generated libraries, in every dlopen mode, and measures the wall time
// from run until every rank has exited, the CPU that took (servers, their
// gdbs and the programs, whoever else shares the machine), and the round
// trips the front end made to answer reported loads. "unload" closes each
// library after its call, so that gdb's own cost per load stays the same
// from the first load to the last; "keep" keeps them all loaded, as a
// program of plugins does.
func BenchmarkDlopen(b *testing.B) {
	testenv.RequireTool(b, "gdb")
	bin := testenv.Examples(b)
	const n, loads = 8, 1000
	settings := []struct{ name, mode, match string }{
		{"slow", "slow", ""},
		{"medium-match", "medium", "libplugin.so"},
		{"medium-no-match", "medium", "libcuda.so*"},
		{"fast", "fast", ""},
	}
	for _, shape := range []struct {
		name string
		args []string
	}{
		{"unload", []string{"-c", strconv.Itoa(loads)}},
		{"keep", []string{strconv.Itoa(loads)}},
	} {
		for _, set := range settings {
			b.Run(fmt.Sprintf("%s/%s", shape.name, set.name), func(b *testing.B) {
				s := gdbSession(b, n)
				all := wire.All(n)
				ctx := context.Background()
				dl := wire.Dlopen{Mode: set.mode, Match: set.match, SetMatch: true}
				command(b, s.Command, all, wire.OpDlopen, wire.MustEncode(dl))
				body := wire.MustEncode(wire.Start{Program: filepath.Join(bin, "dlopen"), Args: shape.args})
				if g := command(b, s.Command, all, wire.OpStart, body); !okRanks(g).Equal(all) {
					b.Fatalf("start: %s", describe(g))
				}
				var pids []int
				for r := 0; r < n; r++ {
					server := s.Job.(*local.Job).Process(r).Pid
					pids = append(pids, server, testenv.Child(b, server, "gdb"))
				}
				for b.Loop() {
					trips, cpu := s.LoadRoundTrips(), treeTicks(b, pids)
					start := time.Now()
					command(b, s.Command, all, wire.OpRun, nil)
					var exited wire.RankSet
					for !exited.Equal(all) {
						wait, cancel := context.WithTimeout(ctx, 10*time.Minute)
						ev, err := s.NextEvent(wait)
						cancel()
						if err != nil {
							b.Fatal(err)
						}
						switch ev.Op {
						case wire.EventExited:
							exited = exited.Union(ev.Group.Ranks)
						case wire.EventStopped, wire.EventError:
							b.Fatalf("%s ranks %v: %s", ev.Op, ev.Group.Ranks, ev.Group.Body)
						}
					}
					b.ReportMetric(time.Since(start).Seconds(), "s/run")
					b.ReportMetric(float64(treeTicks(b, pids)-cpu)/100, "cpu-s/run")
					b.ReportMetric(float64(s.LoadRoundTrips()-trips), "round-trips/run")
				}
			})
		}
	}
}

// treeTicks sums the CPU of pids and of the children they have reaped
// (gdb reaps the program), in clock ticks.
func treeTicks(b testing.TB, pids []int) int {
	total := 0
	for _, pid := range pids {
		data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			b.Fatal(err)
		}
		// utime, stime, cutime, cstime: fields 14 to 17, counted after the
		// command name, which is in parentheses.
		fields := strings.Fields(string(data[strings.LastIndexByte(string(data), ')')+2:]))
		for _, f := range fields[11:15] {
			t, _ := strconv.Atoi(f)
			total += t
		}
	}
	return total
}
