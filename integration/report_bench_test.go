package integration

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/sdm-hpc/sdm/testkit/testenv"
)

// BenchmarkTracepoint64 is 64 ranks of steps, each passing steps.c:12
// 1000 times: the whole command, from its start to its end, run without
// sdm (the 64 processes started at once), under sdm report without a
// tracepoint, under sdm report with a tracepoint there logging i and
// rank (the default gdbs of 16 ranks, then a gdb per rank), and under sdm debug with a breakpoint there that a script
// continues 1000 times (what a tracepoint saves a person from typing).
func BenchmarkTracepoint64(b *testing.B) {
	testenv.RequireTool(b, "gdb")
	steps := filepath.Join(testenv.Examples(b), "steps")
	const n, passes = 64, 1000
	dir := b.TempDir()
	report := []string{"report", "--rm", "local", "-n", strconv.Itoa(n), "--timeout", "5m", "--json", filepath.Join(dir, "run.json")}
	script := []string{"debug", "--rm", "local", "-n", strconv.Itoa(n), "--timeout", "5m", "-e", "break steps.c:12", "-e", "run", "-e", "wait"}
	for range passes {
		script = append(script, "-e", "continue", "-e", "wait")
	}
	for _, c := range []struct {
		name string
		args []string
	}{
		{"without-sdm", nil},
		{"report", report},
		{"report-tracepoint", append(report[:len(report):len(report)], "--trace-at", "steps.c:12,i,rank")},
		{"report-tracepoint-gdb-per-rank", append(report[:len(report):len(report)], "--ranks-per-gdb", "1", "--trace-at", "steps.c:12,i,rank")},
		{"breakpoint-continued", script},
	} {
		b.Run(c.name, func(b *testing.B) {
			var took time.Duration
			for range b.N {
				begin := time.Now()
				if c.args == nil {
					procs := make([]*os.Process, n)
					for r := range n {
						cmd := testenv.Command(b, steps, strconv.Itoa(passes))
						cmd.Env = append(os.Environ(), "SDM_RANK="+strconv.Itoa(r))
						if err := cmd.Start(); err != nil {
							b.Fatal(err)
						}
						procs[r] = cmd.Process
					}
					for _, p := range procs {
						p.Wait()
					}
				} else {
					cmd := testenv.Command(b, sdmBin, append(c.args, "--", steps, strconv.Itoa(passes))...)
					if out, err := cmd.CombinedOutput(); err != nil {
						b.Fatalf("%v: %v\n%s", c.args[:2], err, out)
					}
				}
				took += time.Since(begin)
			}
			b.ReportMetric(took.Seconds()/float64(b.N), "s-command")
		})
	}
}
