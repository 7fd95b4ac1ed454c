package integration

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/sdm-hpc/sdm/launcher"
	"github.com/sdm-hpc/sdm/rm"
	"github.com/sdm-hpc/sdm/testkit/testenv"
	"github.com/sdm-hpc/sdm/wire"
)

// BenchmarkLaunchers measures, for each resource manager, the time from
// the launch to every rank's server joined (ms-joined) and to the program
// loaded in every rank's gdb (ms-ready), next to the launcher's own time to
// run `true` on as many ranks (ms-true): what sdm adds.
func BenchmarkLaunchers(b *testing.B) {
	bin := testenv.Examples(b)
	testenv.RequireTool(b, "gdb")
	poe, _ := filepath.Abs("testdata/poe")
	for _, n := range []int{8, 32} {
		for _, c := range []struct {
			adapter
			trueCmd []string
		}{
			{adapter{rm: "local", program: "ring", force: true}, nil},
			{adapter{rm: "openmpi", program: "ring", args: []string{"--oversubscribe"}},
				[]string{rm.FindProgram("mpirun.openmpi", "mpirun"), "--allow-run-as-root", "--oversubscribe", "-np", strconv.Itoa(n), "true"}},
			{adapter{rm: "mpich", program: "ring-mpich"},
				[]string{rm.FindProgram("mpiexec.hydra", "mpiexec.mpich"), "-n", strconv.Itoa(n), "true"}},
			{adapter{rm: "slurm", program: "ring", args: []string{"--overcommit"}},
				[]string{"srun", "--overcommit", "-n", strconv.Itoa(n), "true"}},
			{adapter{rm: "pe", program: "ring", launcher: poe},
				[]string{poe, "true", "-procs", strconv.Itoa(n)}},
		} {
			b.Run(fmt.Sprintf("rm=%s/ranks=%d", c.rm, n), func(b *testing.B) {
				c.prepare(b)
				for b.Loop() {
					if c.trueCmd != nil {
						b.ReportMetric(float64(runTrue(b, c.trueCmd).Milliseconds()), "ms-true")
					}
					ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
					o := c.options(bin, n)
					o.SDM = sdmBin
					t0 := time.Now()
					s, err := launcher.Launch(ctx, o)
					if err != nil {
						b.Fatal(err)
					}
					b.ReportMetric(float64(time.Since(t0).Milliseconds()), "ms-joined")
					start := wire.MustEncode(wire.Start{Program: filepath.Join(bin, c.program)})
					if g, err := s.Command(ctx, wire.All(n), wire.OpStart, start, time.Minute); err != nil || !okRanks(g).Equal(wire.All(n)) {
						b.Fatalf("start: %s %v", describe(g), err)
					}
					b.ReportMetric(float64(time.Since(t0).Milliseconds()), "ms-ready")
					b.StopTimer()
					if err := s.End(30 * time.Second); err != nil {
						b.Fatal(err)
					}
					cancel()
					b.StartTimer()
				}
			})
		}
	}
}

// runTrue times the launcher running true. mpirun 4.1 now and then hangs
// for good when 32 processes exit at once, so a run that has not ended in
// 10 s is abandoned and tried again, up to three times.
func runTrue(b *testing.B, argv []string) time.Duration {
	for try := 1; ; try++ {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		t0 := time.Now()
		out, err := exec.CommandContext(ctx, argv[0], argv[1:]...).CombinedOutput()
		d := time.Since(t0)
		timedOut := ctx.Err() != nil
		cancel()
		switch {
		case err == nil:
			return d
		case !timedOut || try == 3:
			b.Fatalf("%v: %v\n%s", argv, err, out)
		}
		b.Logf("%v hung; trying again", argv)
	}
}
