package integration

import (
	"bytes"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sdm-hpc/sdm/testkit/testenv"
)

// BenchmarkStacksSlurmJob asks where every rank of an 8-rank batch job
// over the emulated cluster's 4 hosts is, from the command to the
// printed answer (one sample): by its job id (sdm stacks --slurm, from
// this machine: the tasks listed and the servers started through SLURM)
// and through its srun's MPIR (sdm stacks --pid, the servers started over
// ssh), which needs the srun's host.
func BenchmarkStacksSlurmJob(b *testing.B) {
	c := testenv.StartCluster(b)
	b.Setenv("SLURM_CONF", c.SLURMConf)
	const n = 8
	job := sbatched(b, n, "-N", "4", "-n", strconv.Itoa(n))
	step, err := testenv.Command(b, "scontrol", "-o", "show", "step", job+".0").Output()
	if err != nil {
		b.Fatal(err)
	}
	_, srun, _ := strings.Cut(string(step), "SrunHost:Pid=")
	_, pid, _ := strings.Cut(strings.Fields(srun + " ")[0], ":")
	timed := func(argv ...string) time.Duration {
		start := time.Now()
		cmd := testenv.Command(b, sdmBin, argv...)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Run(); err != nil || !strings.Contains(out.String(), "[7] compute at examples/hang/hang.c:12 (1 rank)") {
			b.Fatalf("sdm %v: %v\n%s", argv, err, out.String())
		}
		return time.Since(start)
	}
	var byID, byPid time.Duration
	for range b.N {
		byID += timed("stacks", "--slurm", job, "--samples", "1")
		byPid += timed("stacks", "--pid", pid, "--ssh", c.SSH, "--samples", "1")
	}
	ms := func(d time.Duration) float64 { return float64(d.Milliseconds()) / float64(b.N) }
	b.ReportMetric(ms(byID), "ms-slurm-jobid")
	b.ReportMetric(ms(byPid), "ms-srun-pid")
}
