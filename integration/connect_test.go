package integration

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sdm-hpc/sdm/testkit/testenv"
	"github.com/sdm-hpc/sdm/wire"
)

// connectDir gives the test a private directory of requests.
func connectDir(t *testing.T) string {
	dir := filepath.Join(t.TempDir(), "connect")
	t.Setenv("SDM_CONNECT_DIR", dir)
	return dir
}

// waiting starts sdm connect in the examples' directory, as a batch
// script would, and returns it with its request's ID once the request is
// written.
func waiting(t *testing.T, args ...string) (*proc, string) {
	t.Helper()
	cmd := testenv.Command(t, sdmBin, append([]string{"connect"}, args...)...)
	cmd.Dir = testenv.Examples(t)
	p := start(t, cmd)
	p.lines(t, 1, " waits in ")
	m := regexp.MustCompile(`request ([0-9a-f]{8}) waits`).FindStringSubmatch(p.out.String())
	if m == nil {
		t.Fatalf("no request ID in %q", p.out.String())
	}
	return p, m[1]
}

// exitCode waits for p to end and returns its exit status.
func exitCode(t *testing.T, p *proc) int {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(90 * time.Second):
		t.Fatalf("%v still runs after 90 s:\n%s", p.cmd.Args, p.out.String())
	}
	var ee *exec.ExitError
	if errors.As(p.err, &ee) {
		return ee.ExitCode()
	}
	if p.err != nil {
		t.Fatalf("%v: %v", p.cmd.Args, p.err)
	}
	return 0
}

// Four batch jobs wait at once, under the local launcher, real mpirun,
// real srun, and mpirun acquired through MPIR; one listener accepts and
// debugs each to a merged stop at a breakpoint and lets it finish.
func TestConnect(t *testing.T) {
	dir := connectDir(t)
	t.Setenv("OMPI_MPIR_DO_NOT_WARN", "1")
	testenv.RequireTool(t, "gdb")
	adapter{rm: "slurm"}.prepare(t)
	jobArgs := [][]string{
		{"./ring"},
		{"mpirun", "-np", "4", "--oversubscribe", "./ring"},
		{"srun", "-n", "4", "--mpi=pmix", "./ring"},
	}
	// Open MPI 5's mpirun has no MPIR to acquire its ranks by.
	mpir := testenv.OpenMPIHasMPIR(t)
	if mpir {
		jobArgs = append(jobArgs, []string{"--mpir", "mpirun", "--allow-run-as-root", "-np", "4", "--oversubscribe", "./ring"})
	}
	var jobs []*proc
	for _, args := range jobArgs {
		p, _ := waiting(t, args...)
		jobs = append(jobs, p)
	}
	batch := filepath.Join(t.TempDir(), "cmds")
	os.WriteFile(batch, []byte("break pass\nrun\nwait\ndelete 1\ncontinue\nwait\n"), 0o600)
	out, stderr, code := run(t, "", "listen", "--accept-all", "--max", strconv.Itoa(len(jobs)), "--batch", batch)
	if code != 0 {
		t.Fatalf("listen: exit %d\n%s\n%s", code, out, stderr)
	}
	// Every rank of every job stops: 1 + 4 for each job of 4.
	if stops := rankCount(out, " stopped in pass at examples/ring/ring.c:8 (breakpoint 1)"); stops != 1+4*(len(jobs)-1) ||
		mpir != strings.Contains(out, "attached: stopped") ||
		strings.Count(out, "token after 3 rounds") != 3 { // the starter under MPIR prints its own
		t.Fatalf("listen did not stop and finish every job:\n%s\n%s", out, stderr)
	}
	// The starter acquired through MPIR prints its ranks' output itself.
	if mpir {
		if p := jobs[3]; exitCode(t, p) != 0 || !strings.Contains(p.out.String(), "token after 3 rounds") {
			t.Errorf("mpirun under MPIR:\n%s", p.out.String())
		}
	}
	for _, p := range jobs {
		if code := exitCode(t, p); code != 0 {
			t.Errorf("%v: exit %d\n%s", p.cmd.Args, code, p.out.String())
		}
	}
	if left, _ := filepath.Glob(filepath.Join(dir, "*")); len(left) != 0 {
		t.Errorf("left in the directory: %v", left)
	}
}

// What a waiting job does when it is refused, interrupted or forgotten,
// and what both sides do with a directory or a file they cannot trust.
func TestConnectRefusals(t *testing.T) {
	dir := connectDir(t)
	request := func(id string) string { return filepath.Join(dir, id+".request") }

	t.Run("reject", func(t *testing.T) {
		p, id := waiting(t, "./plain")
		// A file that is not a request is reported and skipped.
		os.WriteFile(filepath.Join(dir, "deadbeef.request"), []byte("{garbage"), 0o600)
		defer os.Remove(filepath.Join(dir, "deadbeef.request"))
		out, stderr, code := run(t, "", "requests")
		if code != 0 || !strings.Contains(out, id+": ") || !strings.Contains(out, "./plain (one process)") ||
			!strings.Contains(stderr, "deadbeef.request: not a request") {
			t.Fatalf("requests: exit %d\n%s\n%s", code, out, stderr)
		}
		if _, stderr, code := run(t, "", "listen", "--reject", id, "--reason", "maintenance at noon"); code != 0 {
			t.Fatalf("listen --reject: exit %d: %s", code, stderr)
		}
		if code := exitCode(t, p); code != 1 || !strings.Contains(p.out.String(), "rejected: maintenance at noon") {
			t.Fatalf("rejected job: exit %d\n%s", code, p.out.String())
		}
		if _, err := os.Stat(request(id)); err == nil {
			t.Error("the rejected request is still there")
		}
	})

	for _, c := range []struct {
		sig  syscall.Signal
		code int
	}{{syscall.SIGINT, 130}, {syscall.SIGTERM, 143}} {
		t.Run(c.sig.String(), func(t *testing.T) {
			p, id := waiting(t, "./plain")
			p.cmd.Process.Signal(c.sig)
			if code := exitCode(t, p); code != c.code || !strings.Contains(p.out.String(), "request "+id+" deleted") {
				t.Fatalf("exit %d, want %d\n%s", code, c.code, p.out.String())
			}
			if _, err := os.Stat(request(id)); err == nil {
				t.Error("the request is still there")
			}
		})
	}

	t.Run("timeout", func(t *testing.T) {
		for _, env := range []bool{false, true} {
			args := []string{"--timeout", "1s", "./plain"}
			if env {
				t.Setenv("SDM_CONNECT_TIMEOUT", "1s")
				args = args[2:]
			}
			p, id := waiting(t, args...)
			if code := exitCode(t, p); code != 1 || !strings.Contains(p.out.String(), "no front end answered request "+id+" within 1s") {
				t.Fatalf("exit %d\n%s", code, p.out.String())
			}
			if _, err := os.Stat(request(id)); err == nil {
				t.Error("the request is still there")
			}
		}
	})

	t.Run("insecure", func(t *testing.T) {
		// Made here, so that this case stands whether the ones before
		// made it or failed before they could.
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		os.Chmod(dir, 0o755)
		defer os.Chmod(dir, 0o700)
		for _, args := range [][]string{{"connect", "./plain"}, {"listen", "--accept-all"}, {"requests"}} {
			if _, stderr, code := run(t, "", args...); code != 1 || !strings.Contains(stderr, "mode 0755 lets others read the session keys") {
				t.Errorf("%s: exit %d: %s", args[0], code, stderr)
			}
		}
	})

	t.Run("usage", func(t *testing.T) {
		for _, c := range []struct {
			args []string
			want string
		}{
			{[]string{"connect", "srun", "./ring"}, "srun: say how many ranks (-n N)"},
			{[]string{"connect", "mpirun", "-np", "four", "./ring"}, `-np "four": want a number of ranks`},
			{[]string{"connect", "mpirun", "-np", "2"}, "no program"},
			{[]string{"listen"}, "not on a terminal"},
			{[]string{"connect", "--timeout=-", "./plain"}, "invalid argument"},
		} {
			if _, stderr, code := run(t, "", c.args...); code != 2 || !strings.Contains(stderr, c.want) {
				t.Errorf("%v: exit %d: %s", c.args, code, stderr)
			}
		}
	})
}

// listen on takes on a job that asks while a session runs: it joins as
// the rank set job2, and the two jobs are debugged as one.
func TestConnectListenOn(t *testing.T) {
	connectDir(t)
	testenv.RequireTool(t, "gdb")
	testenv.RequireTool(t, "mpirun.openmpi", "mpirun")
	first, id := waiting(t, "./ring")
	second, _ := waiting(t, "mpirun", "-np", "2", "--oversubscribe", "./ring")
	out, stderr, code := run(t, "", "listen", "--accept", id,
		"-e", "listen on", "-e", "listen wait 2", "-e", "[all] break pass", "-e", "[all] run", "-e", "[all] wait",
		"-e", "[all] delete 1", "-e", "[all] continue", "-e", "[all] wait", "-e", "listen off")
	if code != 0 {
		t.Fatalf("listen: exit %d\n%s\n%s", code, out, stderr)
	}
	for _, want := range []string{"defset job1 [0]", "defset job2 [1-2]", "listening for new jobs: off"} {
		if !strings.Contains(out, want) {
			t.Fatalf("listen: no %q in\n%s\n%s", want, out, stderr)
		}
	}
	// The jobs' ranks stop and end as one (on one line when no other news
	// of theirs comes between).
	for _, what := range []string{" stopped in pass at examples/ring/ring.c:8 (breakpoint 1)", " exited with code 0"} {
		if got := ranksOf(out, what); !got.Equal(wire.All(3)) {
			t.Fatalf("listen: ranks %v%s, want 0-2:\n%s", got, what, out)
		}
	}
	for _, p := range []*proc{first, second} {
		if code := exitCode(t, p); code != 0 {
			t.Errorf("%v: exit %d\n%s", p.cmd.Args, code, p.out.String())
		}
	}
}

// rankCount adds up the ranks of the lines of out that end in what, so
// that a rank counts as often as it is reported.
func rankCount(out, what string) int {
	n := 0
	for _, line := range strings.Split(out, "\n") {
		if strings.HasSuffix(line, what) {
			n += ranksOf(line, what).Count()
		}
	}
	return n
}
