package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sdm-hpc/sdm/testkit/testenv"
)

// sbatched submits a batch job whose script runs an srun of hang, with
// sbatch's args, and returns its id once n ranks have said they run; the
// job is cancelled when the test ends. SLURM_CONF names the cluster.
func sbatched(t testing.TB, n int, args ...string) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "job.out")
	hang := filepath.Join(testenv.Examples(t), "hang")
	job := submit(t, out, append(args, "--wrap", "srun --mpi=pmix "+hang)...)
	waitLoggedN(t, out, "rank ", n)
	return job
}

// submit runs sbatch with args, its output to out, and returns the job's
// id; the job is cancelled when the test ends.
func submit(t testing.TB, out string, args ...string) string {
	t.Helper()
	cmd := testenv.Command(t, "sbatch", append([]string{"--parsable", "-o", out}, args...)...)
	cmd.Dir = filepath.Dir(out)
	id, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("sbatch: %v\n%s", err, id)
	}
	job, _, _ := strings.Cut(strings.TrimSpace(string(id)), ";")
	t.Cleanup(func() {
		cancel, stop := testenv.CommandTimeout(30*time.Second, "scancel", job)
		defer stop()
		cancel.Run()
	})
	return job
}

// stepPids are the pids of step's tasks on this machine.
func stepPids(t *testing.T, step string) []int {
	t.Helper()
	out, err := testenv.Command(t, "scontrol", "listpids", step).Output()
	if err != nil {
		t.Fatalf("scontrol listpids %s: %v", step, err)
	}
	var pids []int
	for line := range strings.Lines(string(out)) {
		w := strings.Fields(line)
		if len(w) == 5 && w[4] != "-" {
			if pid, err := strconv.Atoi(w[0]); err == nil {
				pids = append(pids, pid)
			}
		}
	}
	return pids
}

// A batch job's srun is out of reach: sdm stacks and sdm attach take its
// step by the job id, find its tasks through SLURM and serve them from
// servers that SLURM starts beside them, and the job runs on, untraced.
func TestAttachSlurmJob(t *testing.T) {
	adapter{rm: "slurm"}.prepare(t)
	const n = 4
	job := sbatched(t, n, "-n", strconv.Itoa(n))
	out, stderr, code := run(t, "", "stacks", "--slurm", job, "--samples", "2", "--interval", "50ms")
	// The waiting ranks' stacks end in several places of Open MPI's
	// progress loop: the classes vary, the suggestion's form does not.
	for _, want := range []string{"[0-2] main at examples/hang/hang.c:27 (3 ranks)\n", "[3] compute at examples/hang/hang.c:12 (1 rank)\n",
		"one rank per class: sdm attach --slurm " + job + ".0 --ranks 0,"} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("sdm stacks --slurm %s: exit %d, no %q in:\n%s%s", job, code, want, out, stderr)
		}
	}
	if want := fmt.Sprintf("acquired %d ranks (SLURM step %s.0 on ", n, job); !strings.Contains(stderr, want) {
		t.Errorf("no %q in:\n%s", want, stderr)
	}
	out, stderr, code = run(t, "", "attach", "--slurm", job+".0", "--ranks", "0,3", "-e", "halt", "-e", "wait", "-e", "where", "-e", "detach")
	if want := "[3] #0  compute () at examples/hang/hang.c:12\n"; code != 0 || !strings.Contains(out, want) || !strings.Contains(out, "[0,3] detached\n") {
		t.Errorf("sdm attach --slurm %s.0: exit %d, no %q in:\n%s%s", job, code, want, out, stderr)
	}
	pids := stepPids(t, job+".0")
	if len(pids) != n {
		t.Fatalf("step %s.0 has %d tasks here after the session: %v", job, len(pids), pids)
	}
	free(t, pids...)
}

// What sdm attach --slurm cannot take says why: a job id that is not
// one, a step that does not run, a job that runs no step with tasks,
// another user's job, a job that has ended.
func TestAttachSlurmJobRefusals(t *testing.T) {
	adapter{rm: "slurm"}.prepare(t)
	out := filepath.Join(t.TempDir(), "job.out")
	job := submit(t, out, "-n", "1", "--wrap", "echo started; exec sleep 300")
	waitLogged(t, out, "started")
	for _, c := range []struct {
		id   string
		code int
		want string
	}{
		{"12x", 2, `--slurm "12x": want JOBID or JOBID.STEP`},
		{"999999", 1, "SLURM job 999999: "},
		{job + ".3", 1, "SLURM step " + job + ".3: "},
		{job, 1, "SLURM job " + job + " runs no step with tasks yet (only its batch script)"},
	} {
		if _, stderr, code := run(t, "", "stacks", "--slurm", c.id); code != c.code || !strings.Contains(stderr, c.want) {
			t.Errorf("sdm stacks --slurm %s: exit %d, want %d and %q:\n%s", c.id, code, c.code, c.want, stderr)
		}
	}
	if os.Geteuid() == 0 {
		anotherUser(t, job)
	}
	cancel := testenv.Command(t, "scancel", job)
	if b, err := cancel.CombinedOutput(); err != nil {
		t.Fatalf("scancel: %v\n%s", err, b)
	}
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(30 * time.Second)
	for {
		_, stderr, _ := run(t, "", "attach", "--slurm", job)
		if strings.Contains(stderr, "SLURM job "+job+" is CANCELLED, not running") {
			break
		}
		select {
		case <-tick.C:
		case <-deadline:
			t.Fatalf("sdm attach --slurm of a cancelled job: %s", stderr)
		}
	}
}

// A batch job over the four hosts, attached by its job id from this
// machine (the login node): a server on each host, started by SLURM beside
// the host's tasks, the stacks and a breakpoint merged over the hosts,
// and the job left running, untraced, after detach.
func TestAttachSlurmJobAcrossHosts(t *testing.T) {
	testenv.RequireTool(t, "gdb")
	c := testenv.StartCluster(t)
	t.Setenv("SLURM_CONF", c.SLURMConf)
	const n = 8
	job := sbatched(t, n, "-N", "4", "-n", strconv.Itoa(n))
	out, stderr, code := run(t, "", "attach", "--slurm", job, "-e", "stacks", "-e", "halt", "-e", "wait",
		"-e", "break hang.c:12", "-e", "continue", "-e", "wait any 30", "-e", "delete 1", "-e", "detach")
	for _, want := range []string{"[0-6] main at examples/hang/hang.c:27 (7 ranks)\n", "[7] compute at examples/hang/hang.c:12 (1 rank)\n",
		"[0-7] breakpoint 1 at examples/hang/hang.c:12 in compute\n", "[7] stopped in compute at examples/hang/hang.c:12 (breakpoint 1)\n",
		"[0-7] detached\n"} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("exit %d, no %q in:\n%s%s", code, want, out, stderr)
		}
	}
	if want := fmt.Sprintf("acquired %d ranks (SLURM step %s.0 on h[1-4])", n, job); !strings.Contains(stderr, want) {
		t.Errorf("no %q in:\n%s", want, stderr)
	}
	ranks := c.Procs(t, "hang")
	if len(ranks) != n {
		t.Fatalf("%d hang processes on the hosts after detach, want %d", len(ranks), n)
	}
	free(t, ranks...)
}

// An editor attaches to a batch job by its id: the ranks are threads, a
// pause shows the stuck rank, and disconnecting lets the job run on.
func TestDAPAttachSlurmJob(t *testing.T) {
	adapter{rm: "slurm"}.prepare(t)
	const n = 4
	job := sbatched(t, n, "-n", strconv.Itoa(n))
	c := launchDAP(t, "attach", map[string]any{"slurm": job})
	pausedAtCompute(t, c, n)
	c.call("disconnect", nil)
	waitFree(t, stepPids(t, job+".0"))
}

// anotherUser has nobody ask for root's job, with a copy of sdm that
// nobody may run: the job is refused as another user's.
func anotherUser(t *testing.T, job string) {
	t.Helper()
	dir, err := os.MkdirTemp("", "sdm-nobody-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	exe, err := os.ReadFile(sdmBin)
	if err == nil {
		err = os.Chmod(dir, 0o755)
	}
	if err == nil {
		err = os.WriteFile(filepath.Join(dir, "sdm"), exe, 0o755)
	}
	if err != nil {
		t.Fatal(err)
	}
	nobody := testenv.Command(t, filepath.Join(dir, "sdm"), "stacks", "--slurm", job)
	nobody.SysProcAttr.Credential = &syscall.Credential{Uid: 65534, Gid: 65534}
	nobody.Dir = dir
	if b, _ := nobody.CombinedOutput(); !strings.Contains(string(b), "SLURM job "+job+" is user root(0)'s: sdm attaches to your own jobs only") {
		t.Errorf("another user's job, asked for by nobody:\n%s", b)
	}
}
