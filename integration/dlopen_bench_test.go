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

	"github.com/sdm-hpc/sdm/dlopen"
	"github.com/sdm-hpc/sdm/launcher"
	"github.com/sdm-hpc/sdm/rm/local"
	"github.com/sdm-hpc/sdm/testkit/testenv"
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

// BenchmarkDlopenMPI runs an Open MPI program on 16 ranks under mpirun,
// one gdb each, and measures the wall time from run until every rank has
// exited (s/run) in the default mode (auto, no breakpoint pending), fast
// and slow, and in auto with a breakpoint that stays pending to the end
// (every load then stops and is read at the rank): what the components
// Open MPI loads at every start cost in each mode. Each iteration runs
// every mode once, in turn, so that whatever else loads the machine falls
// on all of them alike; the figures are the means over the iterations,
// with the CPU of the whole job from launch to end (mpirun, servers, gdbs,
// ranks: the children this process reaped), the front end's round trips,
// and default's wall time and CPU over fast's. The program is Open MPI's
// own examples/ring_c (scripts/thirdparty.sh), or the program and
// arguments in $SDM_BENCH_MPI_PROGRAM (an Open MPI build).
func BenchmarkDlopenMPI(b *testing.B) {
	a := adapter{rm: "openmpi", args: []string{"--oversubscribe"}}
	a.prepare(b)
	argv := []string{testenv.ThirdParty(b).Program(b, "openmpi", "ring_c")}
	bin := filepath.Dir(argv[0])
	if p := strings.Fields(os.Getenv("SDM_BENCH_MPI_PROGRAM")); len(p) > 0 {
		argv = p
	}
	modes := []mpiRun{
		{name: "default", setting: dlopen.Default()},
		{name: "fast", setting: dlopen.Setting{Mode: dlopen.Fast}},
		{name: "slow", setting: dlopen.Setting{Mode: dlopen.Slow}},
		{name: "auto-pending", setting: dlopen.Setting{Mode: dlopen.Auto}, pending: "no_such_function"},
	}
	runs := 0
	for b.Loop() {
		for i := range modes {
			modes[i].once(b, a.options(bin, 16), argv)
		}
		runs++
	}
	for _, m := range modes {
		b.ReportMetric(m.wall.Seconds()/float64(runs), m.name+"-s/run")
		b.ReportMetric(m.cpu.Seconds()/float64(runs), m.name+"-cpu-s/job")
		b.ReportMetric(float64(m.trips)/float64(runs), m.name+"-round-trips/run")
	}
	b.ReportMetric(modes[0].wall.Seconds()/modes[1].wall.Seconds(), "default/fast")
	b.ReportMetric(modes[0].cpu.Seconds()/modes[1].cpu.Seconds(), "default/fast-cpu")
}

// mpiRun is one mode of BenchmarkDlopenMPI and what its runs took.
type mpiRun struct {
	name    string
	setting dlopen.Setting
	pending string // a breakpoint set before the run, if any
	wall    time.Duration
	cpu     time.Duration
	trips   int64
}

// once launches a job of argv in the mode, runs it to its end and ends
// the job.
func (m *mpiRun) once(b *testing.B, o launcher.Options, argv []string) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cpu0 := testenv.ChildrenCPU(b)
	o.Program = argv[0]
	s, err := launcher.Launch(ctx, o)
	if err != nil {
		b.Fatal(err)
	}
	all := wire.All(o.Size)
	command(b, s.Command, all, wire.OpDlopen, wire.MustEncode(m.setting.Wire()))
	start := wire.MustEncode(wire.Start{Program: argv[0], Args: argv[1:]})
	if g, err := s.Command(ctx, all, wire.OpStart, start, 2*time.Minute); err != nil || !okRanks(g).Equal(all) {
		b.Fatalf("%s: start: %s %v", m.name, describe(g), err)
	}
	if m.pending != "" {
		command(b, s.Command, all, wire.OpBreak, wire.MustEncode(wire.Break{Location: m.pending}))
	}
	t0 := time.Now()
	command(b, s.Command, all, wire.OpRun, nil)
	var exited wire.RankSet
	for !exited.Equal(all) {
		ev, err := s.NextEvent(ctx)
		if err != nil {
			b.Fatalf("%s: ranks %v still running: %v", m.name, all.Minus(exited), err)
		}
		switch ev.Op {
		case wire.EventExited:
			exited = exited.Union(ev.Group.Ranks)
		case wire.EventStopped, wire.EventError, wire.EventLost:
			b.Fatalf("%s: %s ranks %v: %s", m.name, ev.Op, ev.Group.Ranks, ev.Group.Body)
		}
	}
	m.wall += time.Since(t0)
	m.trips += s.LoadRoundTrips()
	if err := s.End(30 * time.Second); err != nil {
		b.Fatal(err)
	}
	m.cpu += testenv.ChildrenCPU(b) - cpu0
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
