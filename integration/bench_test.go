package integration

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sdm-hpc/sdm/launcher"
	"github.com/sdm-hpc/sdm/rm/local"
	"github.com/sdm-hpc/sdm/wire"
)

var benchSizes = []int{8, 64, 256, 1024}

// benchShapes are the trees the broadcast is measured on: one node per
// host (all ranks on this one) at every size, its members handing their
// ranks over (hosts) or serving them (hosts-serve), and beside it one
// node per rank, in PTP's binomial tree (fanout 0) and in wide k-ary
// trees.
var benchShapes = []struct {
	ranks, fanout int
	tree          string
}{
	{8, 0, "hosts"}, {64, 0, "hosts"}, {256, 0, "hosts"}, {1024, 0, "hosts"},
	{64, 0, "hosts-serve"}, {256, 0, "hosts-serve"}, {1024, 0, "hosts-serve"},
	{64, 0, "ranks"}, {256, 0, "ranks"}, {256, 16, "ranks"}, {1024, 0, "ranks"}, {1024, 32, "ranks"},
}

// benchTrees are the shapes of --tree, and of --members in the tree of
// hosts.
var benchTrees = []string{"hosts", "hosts-serve", "ranks"}

// shape sets o's --tree and --members as tree names them (benchTrees).
func shape(o launcher.Options, tree string) launcher.Options {
	o.RankTree = tree == "ranks"
	if tree == "hosts-serve" {
		o.Members = "serve"
	}
	return o
}

// BenchmarkBringUp measures a whole local job: from the launch until the
// first broadcast is answered by every rank. The local launcher hands every
// server its listening socket, so start order plays no part.
func BenchmarkBringUp(b *testing.B) {
	for _, n := range benchSizes {
		b.Run(fmt.Sprintf("ranks=%d", n), func(b *testing.B) {
			for b.Loop() {
				start := time.Now()
				s := benchLaunch(b, n)
				groups, err := s.Command(context.Background(), wire.All(n), wire.OpStatus, nil, 30*time.Second)
				if err != nil || !okRanks(groups).Equal(wire.All(n)) {
					b.Fatalf("first broadcast: %s %v", describe(groups), err)
				}
				b.ReportMetric(float64(time.Since(start).Milliseconds()), "ms/up")
				b.StopTimer()
				if err := s.End(30 * time.Second); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
		})
	}
}

// BenchmarkBringUpOrder starts the servers as a launcher without host
// information would (each binds the port of its routing-file entry) and the
// master before them or after them: children keep trying their parent
// until it listens, so neither order waits for long.
func BenchmarkBringUpOrder(b *testing.B) {
	for _, c := range []struct {
		n    int
		tree string
	}{{64, "hosts"}, {256, "hosts"}, {1024, "hosts"}, {2048, "hosts"}, {256, "hosts-serve"}, {1024, "hosts-serve"}, {256, "ranks"}, {1024, "ranks"}} {
		n := c.n
		for _, masterFirst := range []bool{true, false} {
			order := "servers-first"
			if masterFirst {
				order = "master-first"
			}
			b.Run(fmt.Sprintf("%s/ranks=%d/tree=%s", order, n, c.tree), func(b *testing.B) {
				for b.Loop() {
					s := newSession(b, n)
					s.tree = c.tree
					start := time.Now()
					var procs []*proc
					if masterFirst {
						procs = append(procs, s.master())
					}
					args := s.serverArgs()
					for i := 0; i < n; i++ {
						procs = append(procs, s.startServer(args, i))
					}
					if !masterFirst {
						procs = append(procs, s.master())
					}
					ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
					cs, err := s.ln.Accept(ctx, n)
					if err == nil {
						err = cs.WaitConnected(ctx, nil)
					}
					if err != nil {
						b.Fatal(err)
					}
					groups, err := cs.Command(ctx, wire.All(n), wire.OpStatus, nil, 30*time.Second)
					if err != nil || len(groups) == 0 {
						b.Fatalf("first broadcast: %s %v", describe(groups), err)
					}
					b.ReportMetric(float64(time.Since(start).Milliseconds()), "ms/up")
					b.StopTimer()
					// What bounds a bring-up on two cores: the servers' CPU, less
					// noisy than the time.
					servers := procs[:n]
					if masterFirst {
						servers = procs[1:]
					}
					var pids []int
					for _, p := range servers {
						pids = append(pids, p.cmd.Process.Pid)
					}
					b.ReportMetric(cpuMillis(b, pids)/float64(n), "ms-cpu/server")
					cs.Quit(ctx, 30*time.Second)
					for _, p := range procs {
						<-p.done
					}
					cancel()
					b.StartTimer()
				}
			})
		}
	}
}

// BenchmarkBroadcast measures the steady round trip of a command to every
// rank and its merged reply, reported as the median and 90th percentile,
// and the servers' CPU per broadcast and rank: on two cores, what bounds
// the round trip (5 ms over 256 ranks leaves 39 µs of CPU per rank), and
// less noisy than it.
func BenchmarkBroadcast(b *testing.B) {
	for _, c := range benchShapes {
		n := c.ranks
		b.Run(fmt.Sprintf("ranks=%d/fanout=%d/tree=%s", n, c.fanout, c.tree), func(b *testing.B) {
			s := benchLaunchShape(b, n, c.fanout, c.tree)
			defer s.End(30 * time.Second)
			job := s.Job.(*local.Job)
			servers := make([]int, n)
			for r := range servers {
				servers[r] = job.Process(r).Pid
			}
			before := cpuMillis(b, servers)
			var rtts []time.Duration
			for b.Loop() {
				rtts = append(rtts, broadcastWhere(b, s, n))
			}
			cpu := cpuMillis(b, servers) - before
			slices.Sort(rtts)
			b.ReportMetric(float64(rtts[len(rtts)/2].Microseconds())/1000, "ms-median")
			b.ReportMetric(float64(rtts[len(rtts)*9/10].Microseconds())/1000, "ms-p90")
			b.ReportMetric(cpu*1000/float64(len(rtts)*n), "µs-cpu/rank")
		})
	}
}

// broadcastWhere asks every one of n ranks where it is, and returns the
// round trip.
func broadcastWhere(b *testing.B, s *launcher.Session, n int) time.Duration {
	start := time.Now()
	groups, err := s.Command(context.Background(), wire.All(n), wire.OpWhere, nil, 30*time.Second)
	rtt := time.Since(start)
	if err != nil || !okRanks(groups).Equal(wire.All(n)) {
		b.Fatalf("broadcast: %s %v", describe(groups), err)
	}
	return rtt
}

// BenchmarkPausedBroadcast measures the round trip of a command to every
// rank after a pause long enough for the servers to trim themselves: the
// first command after it maps back what the servers run.
func BenchmarkPausedBroadcast(b *testing.B) {
	for _, n := range []int{256, 1024} {
		b.Run(fmt.Sprintf("ranks=%d/tree=hosts", n), func(b *testing.B) {
			s := benchLaunchShape(b, n, 0, "hosts")
			defer s.End(30 * time.Second)
			var rtts []time.Duration
			for b.Loop() {
				b.StopTimer()
				time.Sleep(trimQuiet) // the pause being measured after, not a synchronisation
				b.StartTimer()
				rtts = append(rtts, broadcastWhere(b, s, n))
			}
			slices.Sort(rtts)
			b.ReportMetric(float64(rtts[len(rtts)/2].Microseconds())/1000, "ms-median")
		})
	}
}

// BenchmarkIdle measures what a tree costs while nobody types: the CPU of
// every process over a quiet period, and the memory of a rank server,
// after a few commands and, at 256 ranks, after a long session's
// thousands (which a server's trimming gives back once it is quiet).
func BenchmarkIdle(b *testing.B) {
	for _, n := range []int{256, 1024} {
		for _, tree := range benchTrees {
			for _, commands := range []int{20, 2000} {
				if commands > 20 && (n > 256 || tree != "hosts") {
					continue // minutes of broadcasts for the same story
				}
				b.Run(fmt.Sprintf("ranks=%d/tree=%s/commands=%d", n, tree, commands), func(b *testing.B) {
					benchIdle(b, n, tree, commands)
				})
			}
		}
	}
}

// trimQuiet is how long a rank server waits in quiet before it trims
// itself (server.trimQuiet), and a margin for a loaded machine.
const trimQuiet = 2*time.Second + time.Second

// benchIdle measures the idle CPU and the memory of a tree of n ranks
// after it has answered commands broadcasts.
func benchIdle(b *testing.B, n int, tree string, commands int) {
	s := benchLaunchShape(b, n, 0, tree)
	defer s.End(30 * time.Second)
	job := s.Job.(*local.Job)
	for range commands {
		if _, err := s.Command(context.Background(), wire.All(n), wire.OpWhere, nil, 30*time.Second); err != nil {
			b.Fatal(err)
		}
	}
	pids := make([]int, 0, n+1)
	for r := 0; r <= n; r++ {
		pids = append(pids, job.Process(r).Pid)
	}
	// The servers trim themselves once quiet: what is measured is after.
	time.Sleep(trimQuiet)
	const quiet = 5 * time.Second
	for b.Loop() {
		before := cpuTicks(b, pids)
		time.Sleep(quiet) // the quiet period being measured, not a synchronisation
		after := cpuTicks(b, pids)
		b.ReportMetric(float64(after-before)/100/quiet.Seconds(), "cores")
	}
	var rss, pss int
	for _, pid := range pids[:n] {
		rss += statusKB(b, pid, "VmRSS:")
		pss += rollupKB(b, pid, "Pss:")
	}
	b.ReportMetric(float64(rss)/float64(n)/1024, "MB-RSS/server")
	b.ReportMetric(float64(pss)/float64(n)/1024, "MB-PSS/server")
}

func benchLaunch(b *testing.B, n int) *launcher.Session {
	return benchLaunchShape(b, n, 0, "hosts")
}

// benchLaunchShape launches n ranks of sim servers in the tree that tree
// names (benchTrees).
func benchLaunchShape(b *testing.B, n, fanout int, tree string) *launcher.Session {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	o := shape(launcher.Options{Size: n, Fanout: fanout, Debugger: "sim", SDM: sdmBin, ConnectTimeout: 100 * time.Second}, tree)
	s, err := launcher.Launch(ctx, o)
	if err != nil {
		b.Fatal(err)
	}
	start := wire.MustEncode(wire.Start{Program: "groups", Args: []string{"4"}})
	if _, err := s.Command(ctx, wire.All(n), wire.OpStart, start, 60*time.Second); err != nil {
		b.Fatal(err)
	}
	return s
}

// cpuTicks sums user and system time of pids in clock ticks (1/100 s).
func cpuTicks(b testing.TB, pids []int) int {
	total := 0
	for _, pid := range pids {
		data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			b.Fatal(err)
		}
		// Fields after the command name, which is in parentheses.
		fields := strings.Fields(string(data[strings.LastIndexByte(string(data), ')')+2:]))
		utime, _ := strconv.Atoi(fields[11])
		stime, _ := strconv.Atoi(fields[12])
		total += utime + stime
	}
	return total
}

// cpuMillis is the CPU time the processes pids have used so far, in
// milliseconds, to the nanosecond: the scheduler's count of every thread
// (/proc/PID/task/TID/schedstat).
func cpuMillis(b testing.TB, pids []int) float64 {
	var ns int64
	for _, pid := range pids {
		tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
		if err != nil {
			b.Fatal(err)
		}
		for _, task := range tasks {
			data, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/schedstat", pid, task.Name()))
			if err != nil {
				continue // the thread ended
			}
			f := strings.Fields(string(data))
			if len(f) == 0 {
				b.Fatalf("schedstat of %d/%s: %q", pid, task.Name(), data)
			}
			run, err := strconv.ParseInt(f[0], 10, 64)
			if err != nil {
				b.Fatalf("schedstat of %d/%s: %q", pid, task.Name(), data)
			}
			ns += run
		}
	}
	return float64(ns) / 1e6
}

func statusKB(b testing.TB, pid int, key string) int {
	return fieldKB(b, fmt.Sprintf("/proc/%d/status", pid), key)
}

func rollupKB(b testing.TB, pid int, key string) int {
	return fieldKB(b, fmt.Sprintf("/proc/%d/smaps_rollup", pid), key)
}

func fieldKB(b testing.TB, path, key string) int {
	data, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	for line := range strings.SplitSeq(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, key); ok {
			kb, _ := strconv.Atoi(strings.Fields(rest)[0])
			return kb
		}
	}
	b.Fatalf("%s: no %s", path, key)
	return 0
}
