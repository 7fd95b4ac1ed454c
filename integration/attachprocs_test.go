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

// mpichHang starts n ranks of hang built with MPICH under Hydra's mpiexec,
// as a grandchild, and returns mpiexec's pid and the ranks' pids (in rank
// order: each says its rank). Hydra gives every rank a process group of
// its own, which the test's cleanup would not reach: the ranks are ended
// by pid when the test ends.
func mpichHang(t *testing.T, n int) (int, []int) {
	t.Helper()
	testenv.RequireTool(t, "mpiexec.hydra")
	bin := testenv.Examples(t)
	p, pid := detached(t, nil, "mpiexec.hydra", "-n", strconv.Itoa(n), filepath.Join(bin, "hang-mpich"))
	p.lines(t, n, "rank ")
	ranks := rankPids(t, pid, n)
	t.Cleanup(func() {
		for _, r := range ranks {
			syscall.Kill(r, syscall.SIGKILL)
		}
	})
	return pid, ranks
}

// rankPids returns the n rank processes under a starter, in rank order:
// for Hydra the children of its proxy, for mpirun its own children, each
// numbered by the rank variable its launcher gave it.
func rankPids(t testing.TB, starter, n int) []int {
	t.Helper()
	ranks := make([]int, n)
	found := 0
	for _, kid := range children(starter) {
		procs := children(kid)
		if len(procs) == 0 {
			procs = []int{kid}
		}
		for _, pid := range procs {
			env, _ := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
			for _, kv := range strings.Split(string(env), "\x00") {
				name, value, _ := strings.Cut(kv, "=")
				if r, err := strconv.Atoi(value); err == nil && (name == "PMI_RANK" || name == "OMPI_COMM_WORLD_RANK") && r < n && ranks[r] == 0 {
					ranks[r] = pid
					found++
				}
			}
		}
	}
	if found != n {
		t.Fatalf("%d ranks under pid %d, want %d: %v", found, starter, n, ranks)
	}
	return ranks
}

func joinPids(pids ...int) string {
	s := make([]string, len(pids))
	for i, p := range pids {
		s[i] = strconv.Itoa(p)
	}
	return strings.Join(s, ",")
}

// hungStacks checks the output of halt, wait, stacks and detach on hang:
// the stuck rank apart from the others, every rank detached.
func hungStacks(t *testing.T, out string, n int) {
	t.Helper()
	last := strconv.Itoa(n - 1)
	for _, want := range []string{
		"[0-" + last + "] attached: running",
		"[" + last + "] compute at examples/hang/hang.c:12 (1 rank)",
		"[0-" + strconv.Itoa(n-2) + "] main at examples/hang/hang.c:27 (" + strconv.Itoa(n-1) + " ranks)",
		"[0-" + last + "] detached",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in:\n%s", want, out)
		}
	}
}

// MPICH's mpiexec has no MPIR: sdm attach --starter finds its ranks among
// its descendants (past hydra_pmi_proxy), and the job runs on after.
func TestAttachMPICHStarter(t *testing.T) {
	testenv.RequireTool(t, "gdb")
	const n = 4
	pid, ranks := mpichHang(t, n)
	out, stderr, code := run(t, "", "attach", "--gdb", "eager", "--starter", strconv.Itoa(pid), "-e", "halt", "-e", "wait", "-e", "stacks", "-e", "detach")
	if code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out, stderr)
	}
	hungStacks(t, out, n)
	if want := fmt.Sprintf("sdm: acquired 4 ranks from /proc: processes under pid %d (mpiexec.hydra), PMI_RANK\n", pid); !strings.Contains(stderr, want) {
		t.Errorf("stderr lacks %q:\n%s", want, stderr)
	}
	free(t, append([]int{pid}, ranks...)...)

	// The ranks given by pid, in any order: each one's PMI_RANK tells.
	reversed := []int{ranks[3], ranks[2], ranks[1], ranks[0]}
	out, stderr, code = run(t, "", "attach", "--gdb", "eager", "--pids", joinPids(reversed...), "-e", "halt", "-e", "wait", "-e", "stacks", "-e", "detach")
	if code != 0 || !strings.Contains(stderr, "sdm: acquired 4 ranks from /proc: processes given, PMI_RANK\n") {
		t.Fatalf("exit %d\n%s%s", code, out, stderr)
	}
	hungStacks(t, out, n)
	free(t, ranks...)

	// Two of the four: the others are left alone, and sdm says so.
	out, stderr, code = run(t, "", "attach", "--gdb", "eager", "--pids", joinPids(ranks[1], ranks[3]), "-e", "halt", "-e", "wait", "-e", "where")
	if code != 0 || !strings.Contains(stderr, "2 ranks from /proc: processes given, PMI_RANK; ranks 0,2 of 4 not found on this host: left alone") ||
		!strings.Contains(out, "[3] #0  compute () at examples/hang/hang.c:12") || !strings.Contains(out, "[1,3] attached: running") {
		t.Errorf("exit %d\n%s%s", code, out, stderr)
	}
	free(t, ranks...)
}

// Open MPI's ranks are children of mpirun and carry OMPI_COMM_WORLD_RANK.
func TestAttachOpenMPIStarter(t *testing.T) {
	testenv.RequireTool(t, "gdb")
	const n = 4
	pid := hungMpirun(t, n)
	out, stderr, code := run(t, "", "attach", "--gdb", "eager", "--starter", strconv.Itoa(pid), "-e", "halt", "-e", "wait", "-e", "stacks", "-e", "detach")
	// Named as ps names it: prterun under Open MPI 5, whose mpirun is it.
	comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
	if code != 0 || !strings.Contains(stderr, fmt.Sprintf("processes under pid %d (%s), OMPI_COMM_WORLD_RANK\n", pid, strings.TrimSpace(string(comm)))) {
		t.Fatalf("exit %d\n%s%s", code, out, stderr)
	}
	hungStacks(t, out, n)
	free(t, append([]int{pid}, rankPids(t, pid, n)...)...)
}

// Processes without rank variables are ranks in the order given.
func TestAttachPidsInOrder(t *testing.T) {
	testenv.RequireTool(t, "gdb")
	bin := testenv.Examples(t)
	plain, plainPid := detached(t, nil, filepath.Join(bin, "plain"), "60")
	plain.lines(t, 1, "hello from rank 0")
	_, sleepPid := detached(t, nil, "sleep", "60")
	out, stderr, code := run(t, "", "attach", "--gdb", "eager", "--pids", joinPids(sleepPid, plainPid), "-e", "halt", "-e", "wait", "-e", "where")
	if code != 0 || !strings.Contains(stderr, "sdm: acquired 2 ranks from /proc: processes given, no rank variables: ranks in the order given\n") {
		t.Fatalf("exit %d\n%s%s", code, out, stderr)
	}
	if !strings.Contains(out, "[1] ") || !strings.Contains(out, " rest (seconds=60) at examples/plain/plain.c:") || strings.Contains(out, "[0] "+"rest") {
		t.Errorf("plain is not rank 1:\n%s", out)
	}
	for _, line := range strings.Split(out, "\n") {
		if strings.Contains(line, "rest at examples/plain/plain.c") && !strings.HasPrefix(line, "[1] ") {
			t.Errorf("plain is not rank 1: %s", line)
		}
	}
	free(t, plainPid, sleepPid)
}

// What cannot be attached is said, naming the pid, before anything is.
func TestAttachPidsRefused(t *testing.T) {
	testenv.RequireTool(t, "gdb")
	_, a := detached(t, []string{"PMI_RANK=0", "PMI_SIZE=2"}, "sleep", "60")
	_, b := detached(t, []string{"PMI_RANK=0"}, "sleep", "60")
	_, c := detached(t, nil, "sleep", "60")
	zombie := start(t, testenv.Command(t, "sh", "-c", `sleep 0.3 & echo "zombie $!"; exec sleep 60`))
	zombie.lines(t, 1, "zombie ")
	var z int
	fmt.Sscanf(zombie.out.String()[strings.Index(zombie.out.String(), "zombie "):], "zombie %d", &z)
	waitZombie(t, z)
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--pids", joinPids(a, a)}, 2, fmt.Sprintf("pid %d is given twice", a)},
		{[]string{"--pids", joinPids(a, b)}, 1, fmt.Sprintf("pids %d and %d are both rank 0 (PMI_RANK)", a, b)},
		{[]string{"--pids", joinPids(a, c)}, 1, fmt.Sprintf("pid %d has no rank variable (OMPI_COMM_WORLD_RANK,", c)},
		{[]string{"--pids", joinPids(c, 999999999)}, 1, "pid 999999999: no such process on this host"},
		{[]string{"--pids", joinPids(c, z)}, 1, fmt.Sprintf("pid %d has ended", z)},
		{[]string{"--starter", "999999999"}, 1, "pid 999999999: no such process on this host"},
		{[]string{"--starter", strconv.Itoa(c)}, 1, fmt.Sprintf("no process under pid %d (sleep) carries a rank variable", c)},
		{[]string{"--pids", joinPids(c), "--pid", strconv.Itoa(c)}, 2, "--pid, --pids, --starter and --slurm are exclusive"},
		{[]string{"--pids", "x"}, 2, "--pids"},
		{[]string{"--pids", joinPids(a), "--ranks", "1"}, 1, "ranks 1: not found on this host"},
	} {
		out, stderr, code := run(t, "", append([]string{"attach"}, tc.args...)...)
		if code != tc.code || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, want %d and %q\n%s%s", tc.args, code, tc.code, tc.want, out, stderr)
		}
	}
	free(t, a, b, c)
}

// srun's tasks are slurmstepd's children, not srun's: --starter finds
// none, and points to --pid (MPIR).
func TestAttachStarterSrun(t *testing.T) {
	adapter{rm: "slurm"}.prepare(t)
	name := fmt.Sprintf("sdm-test-sleep-%d", time.Now().UnixNano())
	t.Cleanup(func() { testenv.Command(t, "scancel", "--name", name).Run() })
	_, pid := detached(t, nil, "srun", "-n", "2", "--job-name", name, "sleep", "60")
	_, stderr, code := run(t, "", "attach", "--starter", strconv.Itoa(pid))
	if want := fmt.Sprintf("no process under pid %d (srun) carries a rank variable", pid); code != 1 || !strings.Contains(stderr, want) ||
		!strings.Contains(stderr, "srun's tasks, for one, are started by slurmstepd") || !strings.Contains(stderr, "--pid "+strconv.Itoa(pid)) {
		t.Errorf("exit %d, want 1 and %q:\n%s", code, want, stderr)
	}
}

// procState reads a process's parent and state.
func procState(pid int) (ppid int, state string, err error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, "", err
	}
	// pid (comm) state ppid …: comm may hold spaces, so count from ")".
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	if len(f) < 2 {
		return 0, "", fmt.Errorf("/proc/%d/stat: %q", pid, b)
	}
	ppid, err = strconv.Atoi(f[1])
	return ppid, f[0], err
}

// waitZombie waits until pid has ended and is not reaped.
func waitZombie(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, state, err := procState(pid); err == nil && state == "Z" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("pid %d is no zombie after 10 s", pid)
		}
		time.Sleep(20 * time.Millisecond) // polling the process table: there is no event for another process's child ending
	}
}
