package stackwalk

import (
	"context"
	"runtime"
	"sort"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/sdm-hpc/sdm/testkit/testenv"
)

// benchProcesses is how many processes the benchmarks sample: a node's
// worth of ranks.
const benchProcesses = 64

// BenchmarkSample64 samples 64 processes of 3 threads each, frames named
// with file and line, next to eu-stack on the same processes: cold (a new
// Sampler, every module read), warm (the Sampler of the previous round),
// eu-stack -p (names only) and eu-stack -i -s -p (inlines and file:line),
// one process after another as a script would run them. Reported besides
// time: the time each process spent stopped (median, 90th percentile,
// maximum over every sample).
func BenchmarkSample64(b *testing.B) {
	bin := build(b, "gcc", "threads.c", "-g", "-O2", "-pthread")
	var pids []int
	for range benchProcesses {
		p := startProgram(b, "ready", bin)
		pids = append(pids, p.cmd.Process.Pid)
	}
	for _, pid := range pids {
		waitBlocked(b, pid)
	}
	warm := NewSampler()
	defer warm.Close()
	sampleAll(b, warm, pids) // the first round reads the modules

	b.Run("sampler-cold", func(b *testing.B) {
		var stopped []time.Duration
		for b.Loop() {
			s := NewSampler()
			stopped = append(stopped, sampleAll(b, s, pids)...)
			s.Close()
		}
		reportStopped(b, stopped)
	})
	b.Run("sampler-warm", func(b *testing.B) {
		var stopped []time.Duration
		for b.Loop() {
			stopped = append(stopped, sampleAll(b, warm, pids)...)
		}
		reportStopped(b, stopped)
	})
	euStackPath := testenv.RequireTool(b, "eu-stack")
	for name, args := range map[string][]string{"eu-stack": {"-p"}, "eu-stack-i-s": {"-i", "-s", "-p"}} {
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				for _, pid := range pids {
					if out, err := testenv.Command(b, euStackPath, append(args, strconv.Itoa(pid))...).Output(); err != nil && len(out) == 0 {
						b.Fatalf("eu-stack: %v", err)
					}
				}
			}
		})
	}
}

// sampleAll samples every process, as many at once as there are CPUs,
// and returns how long each was stopped.
func sampleAll(b *testing.B, s *Sampler, pids []int) []time.Duration {
	work := make(chan int)
	var mu sync.Mutex
	var stopped []time.Duration
	var wg sync.WaitGroup
	for range runtime.GOMAXPROCS(0) {
		wg.Go(func() {
			for pid := range work {
				snap, err := s.Sample(context.Background(), pid)
				if err != nil {
					b.Error(err)
					continue
				}
				if len(snap.Threads) != 3 || snap.Threads[0].Frames[1].Line == 0 {
					b.Errorf("process %d: %d threads, or no line numbers:\n%s", pid, len(snap.Threads), format(snap))
				}
				mu.Lock()
				stopped = append(stopped, snap.Stopped)
				mu.Unlock()
			}
		})
	}
	for _, pid := range pids {
		work <- pid
	}
	close(work)
	wg.Wait()
	return stopped
}

func reportStopped(b *testing.B, d []time.Duration) {
	if len(d) == 0 {
		return
	}
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	ms := func(x time.Duration) float64 { return float64(x) / float64(time.Millisecond) }
	b.ReportMetric(ms(d[len(d)/2]), "stopped-ms-median")
	b.ReportMetric(ms(d[len(d)*9/10]), "stopped-ms-p90")
	b.ReportMetric(ms(d[len(d)-1]), "stopped-ms-max")
}

// BenchmarkSampleRunning samples processes that compute without pause
// (a thread in a loop, one in sigwait): the stop includes the time a
// running thread takes to reach its interrupt.
func BenchmarkSampleRunning(b *testing.B) {
	bin := build(b, "gcc", "signals.c", "-O2", "-pthread")
	var pids []int
	for range 2 {
		p := startProgram(b, "", bin)
		if c, err := p.out.ReadByte(); err != nil || c != 'R' {
			b.Fatalf("signals: %q, %v", c, err)
		}
		pids = append(pids, p.cmd.Process.Pid)
	}
	s := NewSampler()
	defer s.Close()
	for _, pid := range pids {
		if _, err := s.Sample(context.Background(), pid); err != nil { // reads the modules
			b.Fatal(err)
		}
	}
	var stopped []time.Duration
	for b.Loop() {
		for _, pid := range pids {
			snap, err := s.Sample(context.Background(), pid)
			if err != nil {
				b.Fatal(err)
			}
			stopped = append(stopped, snap.Stopped)
		}
	}
	reportStopped(b, stopped)
}
