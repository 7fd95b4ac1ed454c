package integration

import (
	"bytes"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/sdm-hpc/sdm/testkit/testenv"
)

// BenchmarkStacksPid is STAT's question asked of a running Open MPI job
// of hang (ranks 0 to N-2 in MPI_Recv, the last computing), from the
// command to the printed answer, five ways: sdm stacks --pid (one server
// for the host's ranks, without gdb, one sample; the table through MPIR,
// or Open MPI 5's PMIx server), the same with the ranks found in /proc
// (--starter: what the table's reading costs is the difference), the
// same with a server per rank, eu-stack -p on each rank in turn, and the
// gdb path (sdm attach --gdb eager: halt, wait, stacks, detach).
func BenchmarkStacksPid(b *testing.B) {
	mpirun := testenv.RequireTool(b, "mpirun.openmpi", "mpirun")
	euStack := testenv.RequireTool(b, "eu-stack")
	bin := testenv.Examples(b)
	for _, n := range []int{8, 16} {
		b.Run("ranks="+strconv.Itoa(n), func(b *testing.B) {
			p, pid := detached(b, []string{"OMPI_MPIR_DO_NOT_WARN=1"}, mpirun, "--allow-run-as-root", "--oversubscribe",
				"-np", strconv.Itoa(n), filepath.Join(bin, "hang"))
			p.lines(b, n, "rank ")
			ranks := rankPids(b, pid, n)
			defer free(b, append([]int{pid}, ranks...)...)
			starter := strconv.Itoa(pid)
			timed := func(name string, argv ...string) time.Duration {
				start := time.Now()
				cmd := testenv.Command(b, argv[0], argv[1:]...)
				var out bytes.Buffer
				cmd.Stdout, cmd.Stderr = &out, &out
				if err := cmd.Run(); err != nil {
					b.Fatalf("%s: %v\n%s", name, err, out.String())
				}
				return time.Since(start)
			}
			var sdm, procs, perRank, eu, gdb time.Duration
			for range b.N {
				sdm += timed("sdm stacks", sdmBin, "stacks", "--pid", starter, "--samples", "1")
				procs += timed("sdm stacks --starter", sdmBin, "stacks", "--starter", starter, "--samples", "1")
				perRank += timed("sdm stacks --server-per-rank", sdmBin, "stacks", "--pid", starter, "--samples", "1", "--server-per-rank")
				for _, r := range ranks {
					eu += timed("eu-stack", euStack, "-p", strconv.Itoa(r))
				}
				gdb += timed("sdm attach", sdmBin, "attach", "--gdb", "eager", "--pid", starter,
					"-e", "halt", "-e", "wait", "-e", "stacks", "-e", "detach")
			}
			ms := func(d time.Duration) float64 { return float64(d.Milliseconds()) / float64(b.N) }
			b.ReportMetric(ms(sdm), "ms-sdm-stacks")
			b.ReportMetric(ms(procs), "ms-sdm-proc")
			b.ReportMetric(ms(perRank), "ms-sdm-per-rank")
			b.ReportMetric(ms(eu), "ms-eu-stack")
			b.ReportMetric(ms(gdb), "ms-gdb-path")
		})
	}
}
