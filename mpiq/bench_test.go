package mpiq

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// BenchmarkInterposition is what the library adds to an MPI call: the
// median time per call of 8-byte ping-pongs between two ranks and of
// 8-byte allreduces over eight, with the library preloaded and without,
// in turns in one run (bench/pingpong.c), under Open MPI; the medians of
// the b.N jobs of each (the ranks share two cores with whatever else
// runs, which a mean would take in).
func BenchmarkInterposition(b *testing.B) {
	lib, _ := build(b, "mpicc.openmpi", "ompi-c")
	prog := filepath.Join(b.TempDir(), "pingpong")
	if out, err := exec.Command("mpicc.openmpi", "-O2", "-o", prog, "bench/pingpong.c").CombinedOutput(); err != nil {
		b.Fatalf("mpicc: %v\n%s", err, out)
	}
	dir := b.TempDir()
	for _, c := range []struct {
		name  string
		ranks string
	}{{"pingpong", "2"}, {"allreduce", "8"}} {
		b.Run(c.name, func(b *testing.B) {
			var plain, preloaded []float64
			for range b.N {
				for _, pre := range []bool{false, true} {
					args := []string{"--allow-run-as-root", "--oversubscribe", "-np", c.ranks, "--bind-to", "none"}
					if pre {
						args = append(args, "-x", "LD_PRELOAD="+lib, "-x", "SDMQ_DIR="+dir)
					}
					ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
					out, err := exec.CommandContext(ctx, "mpirun.openmpi", append(args, prog, c.name)...).Output()
					cancel()
					if err != nil {
						b.Fatalf("mpirun: %v\n%s", err, out)
					}
					ns, err := strconv.ParseFloat(strings.TrimSpace(string(out)), 64)
					if err != nil {
						b.Fatalf("pingpong printed %q", out)
					}
					if pre {
						preloaded = append(preloaded, ns)
					} else {
						plain = append(plain, ns)
					}
				}
			}
			p, q := median(plain), median(preloaded)
			b.ReportMetric(p, "ns/call-plain")
			b.ReportMetric(q, "ns/call-preloaded")
			b.ReportMetric((q/p-1)*100, "%-added")
		})
	}
	os.RemoveAll(dir)
}

func median(xs []float64) float64 {
	slices.Sort(xs)
	return xs[len(xs)/2]
}
