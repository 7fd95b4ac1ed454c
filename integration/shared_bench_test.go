package integration

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sdm-hpc/sdm/backend"
	"github.com/sdm-hpc/sdm/launcher"
	"github.com/sdm-hpc/sdm/testkit/testenv"
	"github.com/sdm-hpc/sdm/wire"
)

// BenchmarkSharedGDB debugs n ranks of plain on the local launcher, a gdb
// per rank (per-gdb=1) and a host's ranks sharing gdbs of 16, side by
// side, with gdb started with the program (eager) and at the first
// command that needs one (lazy, the default: at break), and measures
// what a user waits for: the launch, start, break compute and run to
// every rank stopped or ended (ms-to-stop), the CPU of the session's
// processes (servers, gdbs and programs) until then (ms-cpu-to-stop) and
// that of the whole session (ms-cpu, reaped at its end), the gdbs' resident
// memory at the stop, a print of a local (command to merged answer) and
// a next of every stopped rank (command to every rank stopped again).
func BenchmarkSharedGDB(b *testing.B) {
	testenv.RequireTool(b, "gdb")
	bin := testenv.Examples(b)
	for _, n := range []int{8, 64, 256} {
		for _, start := range []backend.GDBStart{backend.Eager, backend.Lazy} {
			for _, per := range []int{1, 16} {
				if n == 256 && per == 1 && os.Getenv("SDM_BENCH_ALL") == "" {
					continue // 256 gdbs of their own: minutes, on two cores
				}
				b.Run(fmt.Sprintf("ranks=%d/gdb=%s/per-gdb=%d", n, start, per), func(b *testing.B) {
					sharedBench(b, sharedCase{
						options:  launcher.Options{Size: n, GDB: start},
						program:  filepath.Join(bin, "plain"),
						at:       "compute",
						expr:     "rank",
						stopping: wire.All(n).Minus(wire.Single(n - 1)), // the last rank ends: it does not pass compute
					}, per)
				})
			}
		}
	}
}

// BenchmarkSharedGDBOpenMPI is BenchmarkSharedGDB's on 16 ranks of an
// Open MPI program under mpirun (ring, stopped in pass): gdb reads
// libmpi and the libraries it loads once per gdb.
func BenchmarkSharedGDBOpenMPI(b *testing.B) {
	testenv.RequireTool(b, "gdb")
	testenv.RequireTool(b, "mpirun.openmpi", "mpirun")
	bin := testenv.Examples(b)
	const n = 16
	for _, per := range []int{1, 16, 32} {
		b.Run(fmt.Sprintf("ranks=%d/per-gdb=%d", n, per), func(b *testing.B) {
			sharedBench(b, sharedCase{
				options:  launcher.Options{Size: n, RM: "openmpi", GDB: backend.Eager, LauncherArgs: []string{"--oversubscribe"}},
				program:  filepath.Join(bin, "ring"),
				at:       "pass",
				expr:     "rank",
				stopping: wire.All(n),
			}, per)
		})
	}
}

// sharedBench runs b.N sessions of c on gdbs of per ranks and reports
// their figures.
func sharedBench(b *testing.B, c sharedCase, per int) {
	var sum sharedFigures
	var cpu time.Duration
	for range b.N {
		before := testenv.ChildrenCPU(b)
		f := sharedRun(b, c, per)
		sum.toStop, sum.cpuToStop, sum.print, sum.next, sum.rss = sum.toStop+f.toStop, sum.cpuToStop+f.cpuToStop, sum.print+f.print, sum.next+f.next, sum.rss+f.rss
		cpu += testenv.ChildrenCPU(b) - before
	}
	each := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 / float64(b.N) }
	b.ReportMetric(each(sum.toStop), "ms-to-stop")
	b.ReportMetric(each(sum.cpuToStop), "ms-cpu-to-stop")
	b.ReportMetric(each(cpu), "ms-cpu")
	b.ReportMetric(float64(sum.rss)/1024/float64(b.N), "MB-gdbs")
	b.ReportMetric(float64(sum.rss)/1024/float64(b.N)/float64(c.options.Size), "MB-gdbs/rank")
	b.ReportMetric(each(sum.print), "ms-print")
	b.ReportMetric(each(sum.next), "ms-next")
}

// sharedFigures are what one session of BenchmarkSharedGDB measures: the
// time from the launch to every rank stopped or ended, the CPU of the
// session's processes until then, the gdbs' resident memory at the stop
// (KiB), and the print and the next that follow.
type sharedFigures struct {
	toStop, cpuToStop time.Duration
	rss               int
	print, next       time.Duration
}

// sharedCase is what a session of BenchmarkSharedGDB debugs: a job
// (options), its program, where it breaks, what it prints there, and the
// ranks that stop there.
type sharedCase struct {
	options     launcher.Options
	program, at string
	expr        string
	stopping    wire.RankSet
}

// sharedRun is one session of BenchmarkSharedGDB.
func sharedRun(b *testing.B, c sharedCase, per int) (f sharedFigures) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	all, stopping := wire.All(c.options.Size), c.stopping
	o := c.options
	o.Debugger, o.RanksPerGDB, o.SDM = backend.GDB, per, sdmBin
	cpu0, t0 := testenv.TreeCPU(b), time.Now()
	s, err := launcher.Launch(ctx, o)
	if err != nil {
		b.Fatal(err)
	}
	defer s.End(30 * time.Second)
	must := func(set wire.RankSet, op string, body any) {
		var raw []byte
		if body != nil {
			raw = wire.MustEncode(body)
		}
		if g, err := s.Command(ctx, set, op, raw, 2*time.Minute); err != nil || !okRanks(g).Equal(set) {
			b.Fatalf("%s: %s %v", op, describe(g), err)
		}
	}
	// until waits for the events that stop or end every rank of set.
	until := func(set wire.RankSet) {
		var seen wire.RankSet
		for !seen.Equal(set) {
			ev, err := s.NextEvent(ctx)
			if err != nil {
				b.Fatalf("waiting for %v: %v", set.Minus(seen), err)
			}
			if ev.Op == wire.EventStopped || ev.Op == wire.EventExited {
				seen = seen.Union(ev.Group.Ranks)
			}
		}
	}
	must(all, wire.OpStart, wire.Start{Program: c.program})
	must(all, wire.OpBreak, wire.Break{Location: c.at})
	must(all, wire.OpRun, nil)
	until(all)
	f.toStop, f.cpuToStop = time.Since(t0), testenv.TreeCPU(b)-cpu0
	f.rss = gdbRSS(b)
	t1 := time.Now()
	must(stopping, wire.OpPrint, wire.Expr{Expr: c.expr})
	f.print = time.Since(t1)
	t2 := time.Now()
	must(stopping, wire.OpNext, wire.Count{N: 1})
	until(stopping)
	f.next = time.Since(t2)
	return f
}

// gdbRSS sums the resident memory of the machine's gdbs, in kB: a
// benchmark's session has the only ones.
func gdbRSS(b *testing.B) int {
	total := testenv.RSS(testenv.Procs("gdb", "", false))
	if total == 0 {
		b.Fatal("no gdb running")
	}
	return total
}

// BenchmarkSharedGDBAttach attaches to 64 running ranks of plain (asleep
// in usleep) with gdb at once, a gdb per rank and gdbs of 16 side by
// side, and takes every rank's backtrace: the whole command a user types,
// `sdm attach --gdb eager --pids … -e bt`, from its start to its end
// (ms-attach-bt: the attach, the backtrace of every rank, and the detach
// that lets them run on), and its CPU (sdm, servers and gdbs).
func BenchmarkSharedGDBAttach(b *testing.B) {
	testenv.RequireTool(b, "gdb")
	bin := testenv.Examples(b)
	const n = 64
	pids := make([]int, n)
	for i := range pids {
		cmd := testenv.Command(b, filepath.Join(bin, "plain"), "600")
		out, err := cmd.StdoutPipe()
		if err != nil {
			b.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		// It has run past its start once it says hello.
		if _, err := bufio.NewReader(out).ReadString('\n'); err != nil {
			b.Fatalf("rank %d: %v", i, err)
		}
		pids[i] = cmd.Process.Pid
	}
	// One stack for every rank.
	want := []string{fmt.Sprintf("[0-%d] #0  ", n-1), "#3  rest (seconds=600) at examples/plain/plain.c:"}
	for _, per := range []int{1, 16, 32} {
		b.Run(fmt.Sprintf("ranks=%d/per-gdb=%d", n, per), func(b *testing.B) {
			var cpu time.Duration
			for b.Loop() {
				before := testenv.ChildrenCPU(b)
				cmd := testenv.Command(b, sdmBin, "attach", "--gdb", "eager", "--ranks-per-gdb", strconv.Itoa(per),
					"--pids", joinPids(pids...), "-e", "bt")
				out, err := cmd.CombinedOutput()
				if err != nil || !strings.Contains(string(out), want[0]) || strings.Count(string(out), want[1]) != 1 {
					b.Fatalf("%v: %s\nwant %q", err, out, want)
				}
				cpu += testenv.ChildrenCPU(b) - before
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N), "ms-attach-bt")
			b.ReportMetric(float64(cpu.Microseconds())/1000/float64(b.N), "ms-cpu")
		})
	}
}
