package integration

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sdm-hpc/sdm/client"
	"github.com/sdm-hpc/sdm/console"
	"github.com/sdm-hpc/sdm/launcher"
	"github.com/sdm-hpc/sdm/mpir"
	"github.com/sdm-hpc/sdm/testkit/testenv"
	"github.com/sdm-hpc/sdm/wire"
)

func mpirOptions() launcher.Options {
	return launcher.Options{Debugger: "gdb-mi", SDM: sdmBin, ConnectTimeout: 60 * time.Second}
}

// acquire takes over a job through MPIR, and ends the session when the
// test ends unless the test did.
func acquire(t *testing.T, o launcher.Options, m launcher.MPIR) (*job, *launcher.Acquired) {
	t.Helper()
	testenv.RequireTool(t, "gdb")
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	s, acq, err := launcher.Acquire(ctx, o, m)
	if err != nil {
		t.Fatal(err)
	}
	j := &job{Session: s}
	t.Cleanup(func() {
		if !j.ended {
			j.end()
		}
	})
	return j, acq
}

// attached checks that every rank of want attached, in state.
func attached(t *testing.T, acq *launcher.Acquired, want wire.RankSet, state string) {
	t.Helper()
	var got wire.RankSet
	for _, g := range acq.Answers {
		var a wire.Attached
		if g.Status != wire.StatusOK || wire.Decode(g.Body, &a) != nil {
			t.Fatalf("attach: %s", describe(acq.Answers))
		}
		if a.State.State == state {
			got = got.Union(g.Ranks)
		}
	}
	if !got.Equal(want) {
		t.Fatalf("attach: %v %s, want %v: %s", got, state, want, describe(acq.Answers))
	}
}

// lines waits until p has written n lines that contain what.
func (p *proc) lines(t testing.TB, n int, what string) {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for strings.Count(p.out.String(), what) < n {
		select {
		case <-p.wrote:
		case <-p.done:
			t.Fatalf("%s ended before it said %q %d times:\n%s", p.cmd.Args[0], what, n, p.out.String())
		case <-deadline:
			t.Fatalf("%s did not say %q %d times within 30 s:\n%s", p.cmd.Args[0], what, n, p.out.String())
		}
	}
}

// hungMpirun starts n ranks of hang under Open MPI's mpirun, detached,
// and returns mpirun's pid once every rank has said it runs.
func hungMpirun(t testing.TB, n int) int {
	t.Helper()
	mpirun := testenv.RequireTool(t, "mpirun.openmpi", "mpirun")
	p, pid := detached(t, []string{"OMPI_MPIR_DO_NOT_WARN=1"}, mpirun, "--allow-run-as-root", "--oversubscribe", "-np", strconv.Itoa(n), filepath.Join(testenv.Examples(t), "hang"))
	p.lines(t, n, "rank ")
	return pid
}

// detached runs argv in the background as a grandchild, not a child: the
// starter of a job the test attaches to must not be the test's own child,
// whose wait would take the stops that tracing it causes. It returns the
// process and its pid, once it is there.
func detached(t testing.TB, env []string, argv ...string) (*proc, int) {
	t.Helper()
	cmd := testenv.Command(t, "sh", append([]string{"-c", `"$@" & echo "detached pid $!"; wait`, "sh"}, argv...)...)
	cmd.Env = append(os.Environ(), env...)
	p := start(t, cmd)
	p.lines(t, 1, "detached pid ")
	var pid int
	fmt.Sscanf(p.out.String()[strings.Index(p.out.String(), "detached pid "):], "detached pid %d", &pid)
	// Open MPI 5's ranks run in process groups of their own, which the
	// end of the command's group does not reach, and a rank that never
	// calls MPI again would spin on once its mpirun is gone: the
	// starter's descendants go first.
	t.Cleanup(func() {
		var kill func(int)
		kill = func(pid int) {
			for _, kid := range children(pid) {
				kill(kid)
			}
			syscall.Kill(pid, syscall.SIGKILL)
		}
		kill(pid)
	})
	return p, pid
}

// free fails unless each process runs, neither stopped nor traced.
func free(t testing.TB, pids ...int) {
	t.Helper()
	for _, pid := range pids {
		if syscall.Kill(pid, 0) != nil {
			t.Errorf("pid %d is gone", pid)
		}
		if stopped, tracer := mpir.Traced(pid); stopped || tracer != 0 {
			t.Errorf("pid %d: stopped %v, traced by %d", pid, stopped, tracer)
		}
	}
}

// rankServers lists the rank servers this process started (not the
// master), and counts the gdbs they run.
func rankServers() (servers []int, gdbs int) {
	for _, kid := range children(os.Getpid()) {
		argv, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", kid))
		if !bytes.Contains(argv, []byte("\x00--server=")) {
			continue
		}
		servers = append(servers, kid)
		for _, g := range children(kid) {
			if comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", g)); string(comm) == "gdb\n" {
				gdbs++
			}
		}
	}
	return servers, gdbs
}

// children lists the processes whose parent is pid.
func children(pid int) []int {
	var kids []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		child, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", child))
		// pid (comm) state ppid …: comm may hold spaces, so count from ")".
		if i := strings.LastIndexByte(string(stat), ')'); i > 0 {
			f := strings.Fields(string(stat)[i+1:])
			if len(f) > 1 && f[1] == strconv.Itoa(pid) {
				kids = append(kids, child)
			}
		}
	}
	return kids
}

// marked tags every process the test starts from now on, for strays.
func marked(t *testing.T) []byte {
	mark := fmt.Sprintf("SDM_TEST_MARK=%s-%d", t.Name(), time.Now().UnixNano())
	name, value, _ := strings.Cut(mark, "=")
	t.Setenv(name, value)
	return []byte(mark + "\x00")
}

// noStraysMarked fails if a process started with the mark (other than
// this test process) outlives what it was for.
func noStraysMarked(t *testing.T, mark []byte) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	self := strconv.Itoa(os.Getpid()) + " "
	for {
		var strays []string
		for _, p := range sessionProcesses(mark) {
			if !strings.HasPrefix(p, self) {
				strays = append(strays, p)
			}
		}
		if len(strays) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("processes still running 10s after the failure:\n%s", strings.Join(strays, "\n"))
		}
		time.Sleep(50 * time.Millisecond) // polling the process table: there is no event for a process ending elsewhere
	}
}

// debugRing sets a breakpoint in pass, runs every rank to it, checks the
// merged stop and stack tree, and kills the job.
func debugRing(t *testing.T, s *job, n int) {
	t.Helper()
	all := wire.All(n)
	command(t, s.Command, all, wire.OpBreak, wire.MustEncode(wire.Break{Location: "pass"}))
	command(t, s.Command, all, wire.OpRun, nil)
	for _, st := range stoppedAll(t, s.Session.Session, all) {
		if st.Frame.Func != "pass" || st.Frame.Line != 8 {
			t.Fatalf("stop: %+v", st)
		}
	}
	groups := command(t, s.Command, all, wire.OpWhere, nil)
	roots, err := console.BuildStackTree(groups)
	if err != nil || len(groups) != 1 || len(roots) != 1 || !roots[0].Ranks.Equal(all) || findFrame(roots, "pass") == nil {
		t.Fatalf("stacks: %v %s\n%s", err, describe(groups), console.DOT(roots))
	}
	if g := command(t, s.Command, all, wire.OpKill, nil); !okRanks(g).Equal(all) {
		t.Fatalf("kill: %s", describe(g))
	}
}

// debugHang halts a hung job and finds the stuck rank apart in the stack
// tree, then detaches from every rank.
func debugHang(t *testing.T, s *job, n int, recv string) {
	t.Helper()
	all := wire.All(n)
	command(t, s.Command, all, wire.OpHalt, nil)
	stoppedAll(t, s.Session.Session, all)
	roots, err := console.BuildStackTree(command(t, s.Command, all, wire.OpWhere, nil))
	if err != nil {
		t.Fatal(err)
	}
	last := strconv.Itoa(n - 1)
	waiting, stuck := findFrame(roots, recv), findFrame(roots, "compute")
	if waiting == nil || waiting.Ranks.String() != "0-"+strconv.Itoa(n-2) || stuck == nil || stuck.Ranks.String() != last {
		t.Fatalf("stack tree: %s %v, compute %v\n%s", recv, waiting, stuck, console.DOT(roots))
	}
	var detached wire.RankSet
	for _, g := range command(t, s.Command, all, wire.OpDetach, nil) {
		var st wire.State
		if g.Status == wire.StatusOK && wire.Decode(g.Body, &st) == nil && st.State == wire.StateDetached {
			detached = detached.Union(g.Ranks)
		}
	}
	if !detached.Equal(all) {
		t.Fatalf("detached %v of %v", detached, all)
	}
}

// attachHung starts argv, a starter of n ranks of examples/hang, waits
// until every rank runs, attaches to the starter by pid (with one server
// for this host's ranks, or perRank, one per rank), finds the stuck rank
// apart, detaches, and checks that the starter and every rank run on,
// neither stopped nor traced.
func attachHung(t *testing.T, n int, perRank bool, env []string, argv ...string) {
	t.Helper()
	p, pid := detached(t, env, argv...)
	p.lines(t, n, "rank ")
	s, acq := acquire(t, mpirOptions(), launcher.MPIR{Pid: pid, ServerPerRank: perRank})
	attached(t, acq, wire.All(n), wire.StateRunning)
	servers, gdbs := rankServers()
	if want := map[bool]int{true: n, false: 1}[perRank]; len(servers) != want || gdbs != gdbsFor(n) {
		t.Fatalf("%d rank servers with %d gdbs below them for %d ranks on one host; want %d servers, %d gdbs", len(servers), gdbs, n, want, gdbsFor(n))
	}
	// Open MPI's MPI_Recv is an alias of PMPI_Recv, the name gdb shows.
	debugHang(t, s, n, "PMPI_Recv")
	if err := s.end(); err != nil {
		t.Fatal(err)
	}
	free(t, pid)
	for _, pr := range acq.Table.Procs {
		free(t, pr.Pid)
	}
}

// Open MPI's mpirun, both ways: a job launched under MPIR is debugged as
// a wrapped one is; a hung job is attached to by pid, seen, and left to
// run on. Open MPI 5's mpirun has no MPIR: the launch holds the ranks at
// exec (--stop-on-exec) and reads their table from its file, the attach
// reads it from mpirun's PMIx server (sdm-pmix).
func TestMPIROpenMPI(t *testing.T) {
	bin := testenv.Examples(t)
	mpirun := testenv.RequireTool(t, "mpirun.openmpi", "mpirun")
	mpir := testenv.OpenMPIHasMPIR(t)
	const n = 8

	t.Run("launch", func(t *testing.T) {
		o := mpirOptions()
		o.RM, o.Size, o.LauncherArgs = "openmpi", n, []string{"--oversubscribe"}
		s, acq := acquire(t, o, launcher.MPIR{Argv: []string{filepath.Join(bin, "ring")}})
		if len(acq.Table.Procs) != n || !acq.Table.IAmStarter ||
			mpir && !strings.Contains(acq.Table.Object, "libopen-rte") || !mpir && !strings.Contains(acq.Table.Via, "--stop-on-exec") {
			t.Fatalf("table %+v", acq.Table)
		}
		attached(t, acq, wire.All(n), wire.StateStopped)
		debugRing(t, s, n)
		dir := s.Dir
		if err := s.end(); err != nil {
			t.Fatal(err)
		}
		noStrays(t, dir)
	})

	for _, perRank := range []bool{false, true} {
		t.Run(map[bool]string{false: "attach", true: "attach, a server per rank"}[perRank], func(t *testing.T) {
			attachHung(t, n, perRank, []string{"OMPI_MPIR_DO_NOT_WARN=1"}, mpirun, "--allow-run-as-root", "--oversubscribe", "-np", strconv.Itoa(n), filepath.Join(bin, "hang"))
		})
	}
}

// SLURM's srun holds its tasks stopped before main while it waits in
// MPIR_Breakpoint: a launch shows them at main.
func TestMPIRSlurm(t *testing.T) {
	bin := testenv.Examples(t)
	adapter{rm: "slurm"}.prepare(t)
	const n = 4

	t.Run("launch", func(t *testing.T) {
		o := mpirOptions()
		o.RM, o.Size, o.LauncherArgs = "slurm", n, []string{"--mpi=pmix"}
		s, acq := acquire(t, o, launcher.MPIR{Argv: []string{filepath.Join(bin, "ring")}})
		if !acq.Table.AcquiredPreMain || !acq.Table.PartialAttachOK || !strings.HasSuffix(acq.Table.Object, "srun") {
			t.Fatalf("table %+v", acq.Table)
		}
		attached(t, acq, wire.All(n), wire.StateStopped)
		for _, g := range acq.Answers {
			var a wire.Attached
			wire.Decode(g.Body, &a)
			if a.State.Frame.Func != "main" {
				t.Fatalf("acquired before main, shown at %+v", a.State.Frame)
			}
		}
		debugRing(t, s, n)
		dir := s.Dir
		if err := s.end(); err != nil {
			t.Fatal(err)
		}
		noStrays(t, dir)
	})

	t.Run("attach", func(t *testing.T) {
		// srun killed by the test's cleanup would leave its job step
		// running (hang never ends): the job is cancelled by name.
		name := fmt.Sprintf("sdm-test-hang-%d", os.Getpid())
		t.Cleanup(func() { testenv.Command(t, "scancel", "--name", name).Run() })
		attachHung(t, n, false, nil, "srun", "-n", strconv.Itoa(n), "--mpi=pmix", "--job-name", name, filepath.Join(bin, "hang"))
	})
}

// The example starter in each of its settings: every branch of the
// interface on a starter whose behaviour the test knows.
func TestMPIRExampleStarter(t *testing.T) {
	bin := testenv.Examples(t)
	starter := func(name string, args ...string) launcher.MPIR {
		return launcher.MPIR{Starter: true, Argv: append([]string{filepath.Join(bin, name)}, args...)}
	}
	// runToCompute stops ranks at compute and lets them finish.
	runToCompute := func(t *testing.T, s *job, ranks wire.RankSet) {
		t.Helper()
		command(t, s.Command, ranks, wire.OpBreak, wire.MustEncode(wire.Break{Location: "compute"}))
		command(t, s.Command, ranks, wire.OpRun, nil)
		for _, st := range stoppedAll(t, s.Session.Session, ranks) {
			if st.Frame.Func != "compute" {
				t.Fatalf("stop: %+v", st)
			}
		}
		command(t, s.Command, ranks, wire.OpCont, nil)
		var exited wire.RankSet
		events(t, s.Session.Session, func(ev client.Event) bool {
			if ev.Op == wire.EventExited {
				exited = exited.Union(ev.Group.Ranks)
			}
			return ranks.Minus(exited).Empty()
		})
	}

	t.Run("gate", func(t *testing.T) {
		s, acq := acquire(t, mpirOptions(), starter("mpir-starter", "-n", "3"))
		tab := acq.Table
		if !tab.IAmStarter || tab.PartialAttachOK || tab.AcquiredPreMain || tab.DLLName != "libsdm-example-msgq.so" {
			t.Fatalf("table %+v", tab)
		}
		attached(t, acq, wire.All(3), wire.StateStopped)
		var a wire.Attached
		wire.Decode(acq.Answers[0].Body, &a)
		if a.DLL != "libsdm-example-msgq.so" {
			t.Errorf("MPIR_dll_name of the ranks: %q", a.DLL)
		}
		// The ranks waited at MPIR_debug_gate: opened, they reach compute.
		runToCompute(t, s, wire.All(3))
		if err := s.end(); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("starter is rank 0", func(t *testing.T) {
		s, acq := acquire(t, mpirOptions(), starter("mpir-starter-rank0", "-n", "3"))
		if acq.Table.IAmStarter || acq.Table.Procs[0].Pid != acq.Table.Starter {
			t.Fatalf("table %+v", acq.Table)
		}
		attached(t, acq, wire.All(3), wire.StateStopped)
		runToCompute(t, s, wire.All(3))
		if err := s.end(); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("partial attach", func(t *testing.T) {
		m := starter("mpir-starter-partial", "-n", "3")
		var out lockedBuffer
		m.Ranks, m.Output = wire.Range(0, 1), &out
		s, acq := acquire(t, mpirOptions(), m)
		attached(t, acq, wire.Range(0, 1), wire.StateStopped)
		attached(t, acq, wire.Single(2), wire.StateNone)
		// Rank 2, not attached, goes on by itself.
		runToCompute(t, s, wire.Range(0, 1))
		if !strings.Contains(out.String(), "rank 2 of 3") {
			t.Errorf("rank 2 did not run by itself:\n%s", out.String())
		}
		if err := s.end(); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("partial attach refused", func(t *testing.T) {
		mark := marked(t)
		m := starter("mpir-starter", "-n", "3")
		m.Ranks = wire.Range(0, 1)
		_, _, err := launcher.Acquire(context.Background(), mpirOptions(), m)
		if err == nil || !strings.Contains(err.Error(), "no MPIR_partial_attach_ok: attach all 3 ranks, not 0-1") {
			t.Fatalf("got %v", err)
		}
		noStraysMarked(t, mark)
	})

	t.Run("acquired before main", func(t *testing.T) {
		s, acq := acquire(t, mpirOptions(), starter("mpir-starter-premain", "-n", "2"))
		if !acq.Table.AcquiredPreMain {
			t.Fatalf("table %+v", acq.Table)
		}
		for _, g := range acq.Answers {
			var a wire.Attached
			wire.Decode(g.Body, &a)
			if a.State.State != wire.StateStopped || a.State.Frame.Func != "main" {
				t.Fatalf("acquired before main, shown at %+v", a.State)
			}
		}
		runToCompute(t, s, wire.All(2))
		if err := s.end(); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("abort", func(t *testing.T) {
		mark := marked(t)
		_, _, err := launcher.Acquire(context.Background(), mpirOptions(), starter("mpir-starter", "-n", "2", "--abort", "rank 1 lost its way"))
		if err == nil || !strings.Contains(err.Error(), "aborting: rank 1 lost its way") {
			t.Fatalf("got %v", err)
		}
		noStraysMarked(t, mark)
	})

	t.Run("unreachable host", func(t *testing.T) {
		mark := marked(t)
		o := mpirOptions()
		o.SSH = "ssh -o BatchMode=yes -o ConnectTimeout=5"
		_, _, err := launcher.Acquire(context.Background(), o, starter("mpir-starter", "-n", "3", "--host", "2=no-such-host.invalid"))
		if err == nil || !strings.Contains(err.Error(), "ranks 2 on no-such-host.invalid") {
			t.Fatalf("got %v", err)
		}
		noStraysMarked(t, mark)
	})
}

// Attaching leaves a running job as it was, whatever goes wrong.
func TestMPIRAttachErrors(t *testing.T) {
	bin := testenv.Examples(t)
	testenv.RequireTool(t, "gdb")
	try := func(m launcher.MPIR, o launcher.Options, want string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		if _, _, err := launcher.Acquire(ctx, o, m); err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("got %v, want %q", err, want)
		}
	}
	try(launcher.MPIR{Pid: 999999999}, mpirOptions(), "no process with pid 999999999")

	_, sleep := detached(t, nil, "sleep", "60")
	try(launcher.MPIR{Pid: sleep}, mpirOptions(), "is not an MPIR starter: no MPIR_Breakpoint")
	free(t, sleep)

	// A starter that gdb debugs already may not be traced again.
	job, pid := detached(t, nil, filepath.Join(bin, "mpir-starter"), "-n", "2", "--hang")
	job.lines(t, 1, "started 2 ranks")
	gdb := testenv.Command(t, "gdb", "-q", "-nx", "-p", strconv.Itoa(pid))
	in, _ := gdb.StdinPipe()
	g := start(t, gdb)
	fmt.Fprintln(in, "echo attached\\n")
	g.lines(t, 1, "attached")
	try(launcher.MPIR{Pid: pid}, mpirOptions(), "may not trace it: gdb (pid")
	in.Close()
	<-g.done
	free(t, pid)

	// A rank on a host that cannot be reached: the others are let go.
	job, pid = detached(t, nil, filepath.Join(bin, "mpir-starter"), "-n", "3", "--hang", "--host", "1=no-such-host.invalid")
	job.lines(t, 1, "started 3 ranks")
	o := mpirOptions()
	o.SSH = "ssh -o BatchMode=yes -o ConnectTimeout=5"
	try(launcher.MPIR{Pid: pid}, o, "ranks 1 on no-such-host.invalid")
	free(t, pid)
	free(t, children(pid)...)
	if kids := children(pid); len(kids) != 3 {
		t.Errorf("the job has %d ranks left of 3", len(kids))
	}
}

// A rank on another host gets its server there, over ssh.
func TestMPIRRankOnAnotherHost(t *testing.T) {
	bin := testenv.Examples(t)
	ssh, _ := sshd(t)
	job, pid := detached(t, nil, filepath.Join(bin, "mpir-starter"), "-n", "2", "--hang", "--host", "1=rank-host")
	job.lines(t, 1, "started 2 ranks")
	o := mpirOptions()
	o.SSH = ssh + " -o HostName=127.0.0.1"
	s, acq := acquire(t, o, launcher.MPIR{Pid: pid, Stop: true})
	attached(t, acq, wire.All(2), wire.StateStopped)
	roots, err := console.BuildStackTree(command(t, s.Command, wire.All(2), wire.OpWhere, nil))
	if err != nil || findFrame(roots, "compute_forever") == nil || findFrame(roots, "compute_forever").Ranks.String() != "1" {
		t.Fatalf("stacks: %v\n%s", err, console.DOT(roots))
	}
	if err := s.end(); err != nil {
		t.Fatal(err)
	}
	free(t, children(pid)...)
}

// sdm attach, as a user types it.
func TestAttachCommand(t *testing.T) {
	bin := testenv.Examples(t)
	testenv.RequireTool(t, "gdb")
	job, starter := detached(t, nil, filepath.Join(bin, "mpir-starter"), "-n", "4", "--hang")
	job.lines(t, 1, "started 4 ranks")
	pid := strconv.Itoa(starter)
	out, stderr, code := run(t, "", "attach", "--pid", pid, "-e", "halt", "-e", "wait", "-e", "stacks")
	if code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out, stderr)
	}
	for _, want := range []string{"[0-3] attached: running", "[3] compute_forever at"} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in:\n%s", want, out)
		}
	}
	// __libc_pause where libc's debug information is installed.
	if !regexp.MustCompile(`\[0-2\] (__libc_)?pause `).MatchString(out) {
		t.Errorf("ranks 0-2 are not in pause:\n%s", out)
	}
	if !strings.Contains(stderr, "sdm: acquired 4 ranks from pid "+pid) {
		t.Errorf("stderr:\n%s", stderr)
	}
	free(t, children(starter)...)

	if _, stderr, code := run(t, "", "attach"); code != 2 || !strings.Contains(stderr, "--pid PID") {
		t.Errorf("no pid: exit %d: %s", code, stderr)
	}
	if _, stderr, code := run(t, "", "attach", "--pid", pid, "--ranks", "x"); code != 2 || !strings.Contains(stderr, `invalid argument "x" for "--ranks"`) {
		t.Errorf("bad ranks: exit %d: %s", code, stderr)
	}
}
