package integration

import (
	"bufio"
	"context"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sdm-hpc/sdm/backend"
	"github.com/sdm-hpc/sdm/console"
	"github.com/sdm-hpc/sdm/launcher"
	"github.com/sdm-hpc/sdm/testkit/testenv"
	"github.com/sdm-hpc/sdm/wire"
)

// BenchmarkStacksRunning64 is the merged stacks tree of 64 running ranks
// on the local launcher, at the front end, for two programs: hang (each
// rank a one-rank MPI job of its own that computes for ever: 64 processes
// that want the CPU) and plain 600 (64 ranks that wait, in usleep), three
// ways:
//   - lazy: the servers sample the running ranks (after a first stacks,
//     of halted ranks, that read the modules);
//   - eager: every rank's gdb, started with the job, does what a user of
//     gdb does: halt, wait for every stop, where, continue;
//   - attach: the gdb path from ranks that run without one, as the
//     servers had before the sampler: each server starts gdb, attaches
//     it, stops the rank, takes its backtrace and lets it go on. One
//     session per round, each round timed alone.
func BenchmarkStacksRunning64(b *testing.B) {
	testenv.RequireTool(b, "gdb")
	bin := testenv.Examples(b)
	const n = 64
	all := wire.All(n)
	for _, prog := range []struct {
		name  string
		args  []string
		ready string // what each rank writes once it is where it stays
	}{{"hang", nil, "computing"}, {"plain", []string{"600"}, "hello"}} {
		// run launches a session of the program's ranks, running, with
		// their gdb started as start says.
		run := func(ctx context.Context, b *testing.B, start backend.GDBStart) *launcher.Session {
			s, err := launcher.Launch(ctx, launcher.Options{RM: "local", Force: true, Size: n, Debugger: backend.GDB, GDB: start, SDM: sdmBin, ConnectTimeout: 2 * time.Minute})
			if err != nil {
				b.Fatal(err)
			}
			body := wire.MustEncode(wire.Start{Program: filepath.Join(bin, prog.name), Args: prog.args})
			for _, c := range []struct {
				op   string
				body []byte
			}{{wire.OpStart, body}, {wire.OpRun, nil}} {
				if g, err := s.Command(ctx, all, c.op, c.body, 2*time.Minute); err != nil || !okRanks(g).Equal(all) {
					s.End(30 * time.Second)
					b.Fatalf("%s: %s %v", c.op, describe(g), err)
				}
			}
			wrote(ctx, b, s, all, prog.ready)
			return s
		}
		for _, start := range []backend.GDBStart{backend.Lazy, backend.Eager} {
			b.Run(prog.name+"/"+string(start), func(b *testing.B) {
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
				defer cancel()
				s := run(ctx, b, start)
				defer s.End(30 * time.Second)
				stacks := func(warm bool) {
					if start == backend.Eager || warm {
						haltAll(ctx, b, s, all)
					}
					groups, err := s.Command(ctx, all, wire.OpWhere, nil, 3*time.Minute)
					if err != nil || !okRanks(groups).Equal(all) {
						b.Fatalf("where: %s %v", describe(groups), err)
					}
					if _, err := console.BuildStackTree(groups); err != nil {
						b.Fatal(err)
					}
					if start == backend.Eager || warm {
						if g, err := s.Command(ctx, all, wire.OpCont, nil, time.Minute); err != nil || !okRanks(g).Equal(all) {
							b.Fatalf("continue: %s %v", describe(g), err)
						}
					}
				}
				// The servers read the modules (gdb its symbols) once, while
				// the ranks, stopped, leave them the CPUs.
				stacks(true)
				for b.Loop() {
					stacks(false)
				}
				b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms-stacks")
			})
		}
		b.Run(prog.name+"/attach", func(b *testing.B) {
			var took time.Duration
			for range b.N {
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
				s := run(ctx, b, backend.Lazy)
				begin := time.Now()
				g, err := s.Command(ctx, all, wire.OpBacktrace, wire.MustEncode(wire.Backtrace{Full: true}), 3*time.Minute)
				took += time.Since(begin)
				s.End(30 * time.Second)
				cancel()
				if err != nil || !okRanks(g).Equal(all) {
					b.Fatalf("backtrace: %s %v", describe(g), err)
				}
			}
			b.ReportMetric(float64(took.Milliseconds())/float64(b.N), "ms-stacks")
		})
	}
}

// haltAll halts the ranks and waits for every one's stop.
func haltAll(ctx context.Context, b *testing.B, s *launcher.Session, ranks wire.RankSet) {
	if _, err := s.Command(ctx, ranks, wire.OpHalt, nil, time.Minute); err != nil {
		b.Fatal(err)
	}
	var stopped wire.RankSet
	for !stopped.Equal(ranks) {
		ev, err := s.NextEvent(ctx)
		if err != nil {
			b.Fatal(err)
		}
		if ev.Op == wire.EventStopped {
			stopped = stopped.Union(ev.Group.Ranks)
		}
	}
}

// wrote waits until every rank has written what, which the program
// writes once it is where it stays.
func wrote(ctx context.Context, b testing.TB, s *launcher.Session, ranks wire.RankSet, what string) {
	var said wire.RankSet
	for !said.Equal(ranks) {
		ev, err := s.NextEvent(ctx)
		if err != nil {
			b.Fatalf("waiting for the ranks to write %q (%s did): %v", what, said, err)
		}
		var o wire.Output
		if ev.Op == wire.EventOutput && wire.Decode(ev.Group.Body, &o) == nil && strings.Contains(o.Text, what) {
			said = said.Union(ev.Group.Ranks)
		}
	}
}

// BenchmarkRunToEnd64 is 64 ranks of plain (without MPI, to its end at
// once) run to their end with the default --gdb lazy, from run to every
// rank's exit at the front end, and the CPU time of the whole session
// (servers, programs and front end): the price of holding each rank so
// that a fault would stop it (a seize at its exec, a stop per signal and
// new thread), next to eager gdb.
func BenchmarkRunToEnd64(b *testing.B) {
	testenv.RequireTool(b, "gdb")
	bin := testenv.Examples(b)
	const n = 64
	all := wire.All(n)
	for _, start := range []backend.GDBStart{backend.Lazy, backend.Eager} {
		b.Run(string(start), func(b *testing.B) {
			var took, cpu time.Duration
			for range b.N {
				before := testenv.ChildrenCPU(b)
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
				prog := filepath.Join(bin, "plain") // named at the launch, as sdm debug does
				s, err := launcher.Launch(ctx, launcher.Options{RM: "local", Force: true, Size: n, Debugger: backend.GDB, GDB: start, SDM: sdmBin, Program: prog, ConnectTimeout: 2 * time.Minute})
				if err != nil {
					b.Fatal(err)
				}
				body := wire.MustEncode(wire.Start{Program: prog})
				if g, err := s.Command(ctx, all, wire.OpStart, body, 2*time.Minute); err != nil || !okRanks(g).Equal(all) {
					b.Fatalf("start: %s %v", describe(g), err)
				}
				begin := time.Now()
				if g, err := s.Command(ctx, all, wire.OpRun, nil, 2*time.Minute); err != nil || !okRanks(g).Equal(all) {
					b.Fatalf("run: %s %v", describe(g), err)
				}
				var ended wire.RankSet
				for !ended.Equal(all) {
					ev, err := s.NextEvent(ctx)
					if err != nil {
						b.Fatalf("waiting for every rank's end (%s ended): %v", ended, err)
					}
					if ev.Op == wire.EventExited {
						ended = ended.Union(ev.Group.Ranks)
					}
				}
				took += time.Since(begin)
				s.End(30 * time.Second)
				cancel()
				cpu += testenv.ChildrenCPU(b) - before
			}
			b.ReportMetric(float64(took.Milliseconds())/float64(b.N), "ms-run-to-end")
			b.ReportMetric(float64(cpu.Milliseconds())/float64(b.N), "ms-cpu-session")
		})
	}
}

// BenchmarkStacksFirst64 is the first stacks of a session of 64 running
// ranks of busy on the local launcher (56 asleep in nap, 8 spinning, a
// dynamically linked program whose frames pass through libc, whose debug
// file libc6-dbg installs), from the command to the merged tree at the
// front end, with gdb lazy (every server samples its rank, a module cache
// of its own): with the host's module cache empty (the first session on
// a host: one server reads each module and the others wait for it), and
// full (every later session).
func BenchmarkStacksFirst64(b *testing.B) {
	bin := testenv.Examples(b)
	const n = 64
	all := wire.All(n)
	for _, host := range []string{"cold", "warm"} {
		b.Run("host-cache="+host, func(b *testing.B) {
			b.Setenv("XDG_CACHE_HOME", b.TempDir())
			var took time.Duration
			for i := range b.N {
				if host == "cold" {
					b.Setenv("XDG_CACHE_HOME", b.TempDir())
				} else if i == 0 {
					firstStacks(b, bin, n, all) // fills the host's cache
				}
				took += firstStacks(b, bin, n, all)
			}
			b.ReportMetric(float64(took.Milliseconds())/float64(b.N), "ms-first-stacks")
		})
	}
}

// firstStacks launches n ranks of busy, waits until each runs in main,
// and times the first where of all of them to the merged tree.
func firstStacks(b *testing.B, bin string, n int, all wire.RankSet) time.Duration {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	// As sdm debug launches: the program named, which lazy servers read
	// ahead from their start.
	prog := filepath.Join(bin, "busy")
	s, err := launcher.Launch(ctx, launcher.Options{RM: "local", Force: true, Size: n, Debugger: backend.GDB, GDB: backend.Lazy, SDM: sdmBin, Program: prog, ConnectTimeout: 2 * time.Minute})
	if err != nil {
		b.Fatal(err)
	}
	defer s.End(30 * time.Second)
	body := wire.MustEncode(wire.Start{Program: prog, Args: []string{"600"}})
	for _, c := range []struct {
		op   string
		body []byte
	}{{wire.OpStart, body}, {wire.OpRun, nil}} {
		if g, err := s.Command(ctx, all, c.op, c.body, 2*time.Minute); err != nil || !okRanks(g).Equal(all) {
			b.Fatalf("%s: %s %v", c.op, describe(g), err)
		}
	}
	wrote(ctx, b, s, all, "rank ")
	begin := time.Now()
	groups, err := s.Command(ctx, all, wire.OpWhere, nil, 3*time.Minute)
	if err != nil || !okRanks(groups).Equal(all) {
		b.Fatalf("where: %s %v", describe(groups), err)
	}
	if _, err := console.BuildStackTree(groups); err != nil {
		b.Fatal(err)
	}
	return time.Since(begin)
}

// BenchmarkDebugUp64 is sdm debug as a user types it, 64 ranks of plain
// on the local launcher with the defaults: from sdm's start to the
// console's first answer, which comes once every rank is up, and the
// CPU time of that start (sdm, the servers, the front end).
func BenchmarkDebugUp64(b *testing.B) {
	testenv.RequireTool(b, "gdb")
	prog := filepath.Join(testenv.Examples(b), "plain")
	var took, cpu time.Duration
	for range b.N {
		before := testenv.ChildrenCPU(b)
		begin := time.Now()
		cmd := testenv.Command(b, sdmBin, "debug", "-n", "64", "--timeout", "120s", "--", prog)
		in, out, stderr := piped(b, cmd)
		io.WriteString(in, "focus\nquit\n")
		in.Close()
		up := false
		for sc := bufio.NewScanner(out); !up && sc.Scan(); {
			up = sc.Text() == "focus 0-63"
		}
		if !up {
			b.Fatalf("sdm debug ended before its ranks were up: %v\n%s", cmd.Wait(), stderr)
		}
		took += time.Since(begin)
		io.Copy(io.Discard, out)
		if err := cmd.Wait(); err != nil {
			b.Fatalf("sdm debug: %v\n%s", err, stderr)
		}
		cpu += testenv.ChildrenCPU(b) - before
	}
	b.ReportMetric(float64(took.Microseconds())/1000/float64(b.N), "ms-up")
	b.ReportMetric(float64(cpu.Microseconds())/1000/float64(b.N), "ms-cpu-up-and-quit")
}
