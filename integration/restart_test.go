package integration

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sdm-hpc/sdm/client"
	"github.com/sdm-hpc/sdm/launcher"
	"github.com/sdm-hpc/sdm/testkit/testenv"
	"github.com/sdm-hpc/sdm/wire"
)

// typing is sdm with its commands typed on standard input as the test goes,
// so that the test can look at the machine between two of them.
type typing struct {
	t  *testing.T
	p  *proc
	in io.WriteCloser
}

func typeInto(t *testing.T, args ...string) *typing {
	t.Helper()
	cmd := testenv.Command(t, sdmBin, args...)
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	return &typing{t: t, p: start(t, cmd), in: in}
}

// send types the lines.
func (c *typing) send(lines ...string) {
	c.t.Helper()
	if _, err := io.WriteString(c.in, strings.Join(lines, "\n")+"\n"); err != nil {
		c.t.Fatalf("typing %q: %v\n%s", lines, err, c.p.out.String())
	}
}

// expect waits until sdm has said what n times in all.
func (c *typing) expect(n int, what string) {
	c.t.Helper()
	deadline := time.After(120 * time.Second) // a job's launch and a run, on a loaded machine
	for strings.Count(c.p.out.String(), what) < n {
		select {
		case <-c.p.wrote:
		case <-c.p.done:
			c.t.Fatalf("sdm ended before it said %q %d times:\n%s", what, n, c.p.out.String())
		case <-deadline:
			c.t.Fatalf("sdm did not say %q %d times within 120 s:\n%s", what, n, c.p.out.String())
		}
	}
}

// said is how much sdm has said so far, for expectRanks.
func (c *typing) said() int { return len(c.p.out.String()) }

// expectRanks waits until lines ending in what, said after the first
// from bytes, name every rank of want between them: ranks that get to the
// same stop are not always one line, since a rank's news (a library it
// loaded) keeps its order around another rank's stop.
func (c *typing) expectRanks(from int, what string, want wire.RankSet) {
	c.t.Helper()
	deadline := time.After(120 * time.Second)
	for !ranksOf(c.p.out.String()[from:], what).Equal(want) {
		select {
		case <-c.p.wrote:
		case <-c.p.done:
			c.t.Fatalf("sdm ended before ranks %v said %q:\n%s", want, what, c.p.out.String())
		case <-deadline:
			c.t.Fatalf("ranks %v did not say %q within 120 s:\n%s", want, what, c.p.out.String())
		}
	}
}

// end types quit, and returns sdm's exit status and all it said.
func (c *typing) end() (int, string) {
	c.t.Helper()
	c.send("quit")
	c.in.Close()
	return exitCode(c.t, c.p), c.p.out.String()
}

// sessionsMarked returns the session directories of the processes that
// carry mark.
func sessionsMarked(mark []byte) map[string]bool {
	dirs := map[string]bool{}
	prefix := []byte(launcher.SessionEnv + "=")
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		env, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err != nil || !bytes.Contains(env, mark) {
			continue
		}
		for _, kv := range bytes.Split(env, []byte{0}) {
			if bytes.HasPrefix(kv, prefix) {
				dirs[string(kv[len(prefix):])] = true
			}
		}
	}
	return dirs
}

// onlySession returns the one session directory of the processes that
// carry mark.
func onlySession(t *testing.T, mark []byte) string {
	t.Helper()
	dirs := sessionsMarked(mark)
	if len(dirs) != 1 {
		t.Fatalf("want the processes of one session, found sessions %v", dirs)
	}
	for dir := range dirs {
		return dir
	}
	return ""
}

// restartRing runs 4 ranks of examples/ring as a user would after a kill:
// run is refused with the reason, restart relaunches the job (the old
// job's processes all gone), the breakpoint, number bp, is hit again under
// its number, and the job then runs to its end.
func restartRing(t *testing.T, program, launcherName, summary string, bp int, args ...string) {
	mark := marked(t)
	all := wire.All(4)
	argv := append(append([]string{"debug", "-n", "4", "--timeout", "60s"}, args...), "--", program)
	c := typeInto(t, argv...)
	stop := fmt.Sprintf(" stopped in pass at examples/ring/ring.c:8 (breakpoint %d)", bp)
	from := c.said()
	c.send("break pass", "run", "wait")
	c.expectRanks(from, stop, all)
	old := onlySession(t, mark)
	c.send("kill", "run")
	c.expect(1, "[0-3] were started by "+launcherName+" as one job: run cannot start them again alone (they would die in MPI_Init); restart relaunches the whole job\n")
	from = c.said()
	c.send("restart", "wait")
	c.expect(1, "restarted: "+summary+"; 1 breakpoint planted\n")
	c.expectRanks(from, stop, all)
	noStrays(t, old)
	now := onlySession(t, mark)
	if now == old {
		t.Fatalf("the job after restart runs in the old session %s", old)
	}
	from = c.said()
	c.send("delete "+strconv.Itoa(bp), "continue", "wait")
	c.expectRanks(from, " exited with code 0", all)
	code, out := c.end()
	// The refused run counts as a failure in the exit status.
	if code != 1 || !strings.Contains(out, "token after 3 rounds: 18") {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	noStrays(t, now)
}

// kill, run and restart under each launcher that starts the ranks as one
// job, and under mpirun acquired through MPIR.
func TestRestartUnderLaunchers(t *testing.T) {
	bin := testenv.Examples(t)
	ring := filepath.Join(bin, "ring")
	t.Run("openmpi", func(t *testing.T) {
		adapter{rm: "openmpi"}.prepare(t)
		restartRing(t, ring, "mpirun", "4 ranks under mpirun", 1, "--rm", "openmpi", "--launcher-arg=--oversubscribe")
	})
	t.Run("mpich", func(t *testing.T) {
		adapter{rm: "mpich"}.prepare(t)
		restartRing(t, filepath.Join(bin, "ring-mpich"), "mpiexec", "4 ranks under mpiexec", 1, "--rm", "mpich")
	})
	t.Run("slurm", func(t *testing.T) {
		adapter{rm: "slurm"}.prepare(t)
		restartRing(t, ring, "srun", "4 ranks under srun", 1, "--rm", "slurm", "--launcher-arg=--mpi=pmix")
	})
	t.Run("mpir", func(t *testing.T) {
		adapter{rm: "openmpi"}.prepare(t)
		t.Setenv("OMPI_MPIR_DO_NOT_WARN", "1")
		// Open MPI 5's mpirun holds the ranks at exec: they are run to
		// main at a temporary breakpoint, number 1, first.
		summary, bp := "4 ranks under mpirun, acquired through MPIR", 1
		if !testenv.OpenMPIHasMPIR(t) {
			summary, bp = "4 ranks under mpirun, held at exec by --stop-on-exec", 2
		}
		restartRing(t, ring, "mpirun", summary, bp, "--mpir", "--rm", "openmpi", "--launcher-arg=--oversubscribe")
	})
}

// Under the local launcher each rank is a program of its own: run after
// kill runs it again, as gdb does. restart brings back the breakpoints as
// the user left them: the deleted one stays deleted, the temporary one
// that was hit is gone, numbers and the condition are kept, the disabled
// watchpoint stays disabled, and new ones go on from the last number;
// each rank's dlopen setting, the named sets and the focus stay too.
func TestRestartKeepsBreakpoints(t *testing.T) {
	testenv.RequireTool(t, "gdb")
	bin := testenv.Examples(t)
	flags, kind := watchpoints()
	out, stderr, code := run(t, "", append(append([]string{"debug", "-n", "4"}, flags...), "--rm", "local", "--timeout", "60s",
		"-e", "break compute if rank == 1", // 1
		"-e", "break special", // 2
		"-e", "tbreak main", // 3, hit before the restart
		"-e", "watch counter", // 4
		"-e", "disable 4", "-e", "delete 2",
		"-e", "trace compute,rank", // 5
		"-e", "run", "-e", "wait", "-e", "kill", "-e", "run", "-e", "wait",
		"-e", "[0-1] set dlopen medium libplugin.so", "-e", "defset odd 1,3", "-e", "focus odd",
		"-e", "restart", "-e", "[all] wait", "-e", "[all] breakpoints", "-e", "[all] show dlopen", "-e", "sets", "-e", "break rest",
		"--", filepath.Join(bin, "plain"))...)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, stderr)
	}
	stop := "[1] stopped in compute at examples/plain/plain.c:15 (breakpoint 1)\n"
	for _, want := range []string{
		"[0-3] stopped in main at examples/plain/plain.c:35 (breakpoint 3)\n",
		"restarted: 4 ranks under the local launcher; 3 breakpoints planted\n",
		"[0-3] breakpoint 1 at examples/plain/plain.c:15 in compute if rank == 1\n" +
			"      " + kind + " 4 on counter, disabled\n" +
			"      tracepoint 5 at examples/plain/plain.c:15 in compute, logs rank\n",
		"[0-1] dlopen medium: every load stops, loads of libplugin.so are reported\n" +
			"[2-3] dlopen auto: loads stop only while a breakpoint is pending, which the rank plants itself\n",
		"focus = [1,3]\nodd = [1,3]\n",
		"[1,3] breakpoint 6 at examples/plain/plain.c:29 in rest\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	// Once after kill and run, once after restart; the first run stopped in main.
	if n := strings.Count(out, stop); n != 2 {
		t.Errorf("rank 1 stopped at compute %d times, want 2", n)
	}
	// The tracepoint, kept, counts each process's passes from 1: rank 2
	// passes compute once in the run after kill and once after restart.
	if n := strings.Count(out, "[2] trace 5, pass 1: rank = 2\n"); n != 2 {
		t.Errorf("rank 2's pass through the tracepoint told %d times, want 2", n)
	}
	if t.Failed() {
		t.Logf("output:\n%s\nstderr:\n%s", out, stderr)
	}
}

// What restart cannot bring back is reported, naming the breakpoint and
// the ranks: a watchpoint on a local has no frame before the program
// runs, and a catchpoint is not a breakpoint restart makes. Their numbers
// stay used.
func TestRestartReportsWhatItCannotKeep(t *testing.T) {
	testenv.RequireTool(t, "gdb")
	bin := testenv.Examples(t)
	flags, kind := watchpoints()
	out, stderr, code := run(t, "", append(append([]string{"debug", "-n", "1"}, flags...), "--rm", "local", "--timeout", "60s",
		"-e", "break compute", "-e", "run", "-e", "wait", "-e", "watch value", "-e", "gdb catch fork",
		"-e", "restart", "-e", "wait", "-e", "break rest",
		"--", filepath.Join(bin, "plain"))...)
	if code != 1 {
		t.Fatalf("exit %d, want 1 for what was not kept\n%s\n%s", code, out, stderr)
	}
	for _, want := range []string{
		"[0] " + kind + " 2 on value could not be planted: error: No symbol \"value\" in current context.\n",
		"[0] catchpoint 3 not kept: restart makes breakpoints and watchpoints again, not catchpoints\n",
		"restarted: 1 rank under the local launcher; 1 breakpoint planted\n",
		"[0] breakpoint 4 at examples/plain/plain.c:29 in rest\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	if n := strings.Count(out, "[0] stopped in compute at examples/plain/plain.c:15 (breakpoint 1)\n"); n != 2 {
		t.Errorf("stopped at compute %d times, want 2", n)
	}
	if t.Failed() {
		t.Logf("output:\n%s\nstderr:\n%s", out, stderr)
	}
}

// A job that cannot start again says why, after the old one has ended
// with nothing left behind.
func TestRestartJobDoesNotComeBack(t *testing.T) {
	testenv.RequireTool(t, "gdb")
	bin := testenv.Examples(t)
	program := filepath.Join(t.TempDir(), "plain")
	if data, err := os.ReadFile(filepath.Join(bin, "plain")); err != nil || os.WriteFile(program, data, 0o755) != nil {
		t.Fatalf("copy plain: %v", err)
	}
	mark := marked(t)
	c := typeInto(t, "debug", "-n", "2", "--rm", "local", "--", program)
	c.send("status")
	c.expect(1, "[0-1] not started (loaded)\n")
	old := onlySession(t, mark)
	os.Remove(program)
	c.send("restart")
	host, _ := os.Hostname()
	c.expect(1, "restart: the job did not start again: on "+host+": the program "+program+" does not exist\n")
	if code := exitCode(t, c.p); code != 1 {
		t.Fatalf("exit %d:\n%s", code, c.p.out.String())
	}
	noStrays(t, old)
}

// A job taken over with sdm attach was started by the user: restart says
// how to start it under sdm instead, and leaves it running.
func TestRestartRefusedAfterAttach(t *testing.T) {
	bin := testenv.Examples(t)
	testenv.RequireTool(t, "gdb")
	mpirun := testenv.RequireTool(t, "mpirun.openmpi", "mpirun")
	p, pid := detached(t, []string{"OMPI_MPIR_DO_NOT_WARN=1"}, mpirun, "--allow-run-as-root", "-np", "2", filepath.Join(bin, "hang"))
	p.lines(t, 2, "rank ")
	_, stderr, code := run(t, "", "attach", "--pid", strconv.Itoa(pid), "-e", "restart")
	// The starter's own command line: Open MPI 5's mpirun runs on as
	// prterun, which it executes with its arguments.
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		t.Fatal(err)
	}
	starter, _, _ := strings.Cut(string(cmdline), "\x00")
	if starter != mpirun && filepath.Base(starter) != "prterun" {
		t.Fatalf("pid %d runs %q, not %s", pid, starter, mpirun)
	}
	want := fmt.Sprintf("restart: this job was started outside sdm (sdm attach took over its starter, pid %d), so sdm cannot start it again; to be able to restart it, start it under sdm: sdm debug --mpir --starter -- %s --allow-run-as-root -np 2 %s",
		pid, starter, filepath.Join(bin, "hang"))
	if code != 2 || !strings.Contains(stderr, want) {
		t.Fatalf("exit %d, stderr:\n%s\nwant %q", code, stderr, want)
	}
	free(t, pid)
}

// A job of sdm listen runs where its batch system put it: restart says so.
func TestRestartRefusedAfterListen(t *testing.T) {
	connectDir(t)
	testenv.RequireTool(t, "gdb")
	job, _ := waiting(t, "./plain")
	_, stderr, code := run(t, "", "listen", "--accept-all", "--max", "1", "-e", "restart")
	host, _ := os.Hostname()
	if code == 0 || !strings.Contains(stderr, "restart: this job connected back from "+host+" (sdm connect): it runs where its batch system placed it") {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr)
	}
	exitCode(t, job)
}

// The relay passes on the old session's last events before the new
// session's first, and none of the old one's after; commands go to the
// current session, or are answered why there is none.
func TestRelay(t *testing.T) {
	const n = 4
	all := wire.All(n)
	a, b := launch(t, n, 0, "hang"), launch(t, n, 0, "ring")
	r := client.NewRelay(a.Session.Session)
	command(t, r.Command, all, wire.OpRun, nil)
	// Stopped by the halt or at its simulated breakpoint: either way, the
	// stops come before the halt's answer, so they are the old job's
	// last words before it ends.
	command(t, r.Command, all, wire.OpHalt, nil)
	if err := a.end(); err != nil {
		t.Fatal(err)
	}
	why := errors.New("no job for now")
	r.Vacate(why)
	if _, err := r.Command(context.Background(), all, wire.OpWhere, nil, 10*time.Second); !errors.Is(err, why) {
		t.Fatalf("a command between two sessions: %v", err)
	}
	r.Switch(b.Session.Session)
	if got := describe(command(t, r.Command, wire.Single(1), wire.OpWhere, nil)); got != "[1] ok MPI_Sendrecv; " {
		t.Fatalf("where after the switch: %s", got)
	}
	command(t, r.Command, all, wire.OpRun, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var old, fresh wire.RankSet
	for !fresh.Equal(all) {
		ev, err := r.NextEvent(ctx)
		if err != nil {
			t.Fatalf("after old stops %v and new ones %v: %v", old, fresh, err)
		}
		if ev.Op != wire.EventStopped {
			continue
		}
		var st wire.State
		wire.Decode(ev.Group.Body, &st)
		switch st.Frame.Func {
		case "MPI_Recv", "compute": // hang: the old job
			if !fresh.Empty() {
				t.Fatalf("a stop of the old job %v came after the new job's %v", ev.Group.Ranks, fresh)
			}
			old = old.Union(ev.Group.Ranks)
		default:
			fresh = fresh.Union(ev.Group.Ranks)
		}
	}
	if !old.Equal(all) {
		t.Fatalf("the old job's last stops reached ranks %v only", old)
	}
	b.end()
	r.Close()
	for {
		if _, err := r.NextEvent(ctx); err != nil {
			if err != io.EOF {
				t.Fatalf("after close: %v", err)
			}
			break
		}
	}
}

// A job started on a target over ssh starts again there.
func TestRelaunchOnTarget(t *testing.T) {
	const n = 2
	all := wire.All(n)
	o, daemon := onTarget(t, n)
	ctx, cancel := context.WithTimeout(context.Background(), 180*time.Second)
	defer cancel()
	first, err := launcher.Launch(ctx, o)
	if err != nil {
		t.Fatalf("%v\nsshd:\n%s", err, daemon.out.String())
	}
	if _, err := first.Relaunch(ctx); err == nil || !strings.Contains(err.Error(), "must end before it starts again") {
		t.Fatalf("relaunch of a job that runs: %v", err)
	}
	if err := first.End(30 * time.Second); err != nil {
		t.Fatal(err)
	}
	noStrays(t, first.Dir)
	s, err := first.Relaunch(ctx)
	if err != nil {
		t.Fatalf("%v\nsshd:\n%s", err, daemon.out.String())
	}
	if got := s.Summary(); got != "2 ranks under mpirun on root@127.0.0.1" || s.Launcher() != "mpirun" {
		t.Fatalf("summary %q, launcher %q", got, s.Launcher())
	}
	command(t, s.Command, all, wire.OpStart, wire.MustEncode(wire.Start{Program: o.Program}))
	command(t, s.Command, all, wire.OpBreak, wire.MustEncode(wire.Break{Location: "pass"}))
	command(t, s.Command, all, wire.OpRun, nil)
	stoppedAll(t, s.Session, all)
	if err := s.End(30 * time.Second); err != nil {
		t.Fatal(err)
	}
	noStrays(t, s.Dir)
}
