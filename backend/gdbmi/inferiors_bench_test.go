package gdbmi_test

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/sdm-hpc/sdm/backend/gdbmi"
	"github.com/sdm-hpc/sdm/testkit/testenv"
)

// BenchmarkInferiorsPerGDB measures what sharing a gdb between ranks
// costs and saves: 64 ranks of plain, in 64/K gdbs of K inferiors each
// (gdb in non-stop mode, an inferior per rank with its own environment),
// run to a breakpoint on compute (the last rank, which does not pass
// there, to its end). Reported: the wall time from the first gdb's start
// to every rank stopped, the CPU of the gdbs and what they reaped, and
// the gdbs' resident memory at the stop.
func BenchmarkInferiorsPerGDB(b *testing.B) {
	testenv.RequireTool(b, "gdb")
	prog := filepath.Join(testenv.Examples(b), "plain")
	const ranks = 64
	for _, k := range []int{1, 8, 16, 32} {
		b.Run(fmt.Sprintf("per-gdb=%d", k), func(b *testing.B) {
			var wall, cpu time.Duration
			var rss int
			for range b.N {
				before := testenv.ChildrenCPU(b)
				begin := time.Now()
				var wg sync.WaitGroup
				gdbs := make([]*gdbmi.GDB, ranks/k)
				errs := make([]error, ranks/k)
				for i := range gdbs {
					wg.Go(func() { gdbs[i], errs[i] = inferiors(prog, i*k, k, ranks) })
				}
				wg.Wait()
				wall += time.Since(begin)
				rss += gdbRSS(b)
				for i, g := range gdbs {
					if g != nil {
						g.Close()
					}
					if errs[i] != nil {
						b.Fatal(errs[i])
					}
				}
				cpu += testenv.ChildrenCPU(b) - before
			}
			b.ReportMetric(float64(wall.Milliseconds())/float64(b.N), "ms-to-stops")
			b.ReportMetric(float64(cpu.Milliseconds())/float64(b.N), "ms-cpu")
			b.ReportMetric(float64(rss)/float64(b.N)/1024, "MB-gdbs")
		})
	}
}

// inferiors starts a gdb with ranks first..first+k-1 of size as its
// inferiors and runs them until each has stopped or ended.
func inferiors(prog string, first, k, size int) (*gdbmi.GDB, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	g, err := gdbmi.Start("gdb")
	if err != nil {
		return nil, err
	}
	var failed error
	run := func(cmd string) string {
		r, _, err := g.Run(ctx, cmd)
		if err != nil && failed == nil {
			failed = fmt.Errorf("%s: %v", cmd, err)
		}
		return r.Results.S("inferior")
	}
	run("-gdb-set non-stop on")
	run("-gdb-set mi-async on")
	for i := range k {
		group := "i1"
		if i > 0 {
			group = run("-add-inferior")
		}
		run(fmt.Sprintf("-file-exec-and-symbols --thread-group %s %s", group, prog))
		run(fmt.Sprintf(`-interpreter-exec --thread-group %s console "set environment SDM_RANK=%d"`, group, first+i))
		run(fmt.Sprintf(`-interpreter-exec --thread-group %s console "set environment SDM_SIZE=%d"`, group, size))
	}
	run("-break-insert compute")
	for i := range k {
		run(fmt.Sprintf("-exec-run --thread-group i%d", i+1))
	}
	if failed != nil {
		return g, failed
	}
	for left := k; left > 0; {
		select {
		case r := <-g.Async():
			if r.Class == "stopped" {
				left--
			}
			g.Handled()
		case <-ctx.Done():
			return g, fmt.Errorf("ranks %d-%d: %d not stopped within 2 minutes", first, first+k-1, left)
		}
	}
	return g, nil
}

// gdbRSS sums the resident memory of this process's gdb children, in kB.
func gdbRSS(b *testing.B) int {
	total := testenv.RSS(testenv.Procs("gdb", "", true))
	if total == 0 {
		b.Fatal("no gdb among this process's children")
	}
	return total
}
