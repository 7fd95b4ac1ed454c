package integration

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sdm-hpc/sdm/client"
	"github.com/sdm-hpc/sdm/console"
	"github.com/sdm-hpc/sdm/launcher"
	"github.com/sdm-hpc/sdm/testkit/testenv"
	"github.com/sdm-hpc/sdm/wire"
)

// adapter describes how to run examples/ring under one resource manager.
type adapter struct {
	rm       string
	program  string // the build of ring for this launcher's MPI
	launcher string
	args     []string
	// force runs an MPI program under a launcher of no MPI: each rank
	// is then a job of its own, and the adapter is what is tested.
	force bool
}

// adapters returns every resource manager, each with what it needs here.
func adapters(t *testing.T) []adapter {
	poe, _ := filepath.Abs("testdata/poe")
	return []adapter{
		{rm: "local", program: "ring", force: true},
		{rm: "openmpi", program: "ring", args: []string{"--oversubscribe"}},
		{rm: "mpich", program: "ring-mpich"},
		{rm: "slurm", program: "ring", args: []string{"--mpi=pmix"}},
		{rm: "pe", program: "ring", launcher: poe},
	}
}

// prepare checks what the adapter needs on this machine.
func (a adapter) prepare(t testing.TB) {
	testenv.RequireTool(t, "gdb")
	switch a.rm {
	case "openmpi":
		testenv.RequireTool(t, "mpirun.openmpi", "mpirun")
	case "mpich":
		testenv.RequireTool(t, "mpiexec.hydra", "mpiexec.mpich")
	case "slurm":
		t.Setenv("SLURM_CONF", testenv.SLURM(t))
	}
}

func (a adapter) options(bin string, n int) launcher.Options {
	return launcher.Options{
		RM: a.rm, Size: n, Debugger: "gdb-mi", SDM: sdmBin,
		Program: filepath.Join(bin, a.program), Launcher: a.launcher, LauncherArgs: a.args,
		Force: a.force, ConnectTimeout: 60 * time.Second,
	}
}

// launch starts n ranks of the adapter's program under gdb and loads it
// on every rank.
func (a adapter) launch(t *testing.T, bin string, n int) *launcher.Session {
	t.Helper()
	a.prepare(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	s, err := launcher.Launch(ctx, a.options(bin, n))
	if err != nil {
		t.Fatal(err)
	}
	start := wire.MustEncode(wire.Start{Program: filepath.Join(bin, a.program)})
	if g := command(t, s.Command, wire.All(n), wire.OpStart, start); !okRanks(g).Equal(wire.All(n)) {
		t.Fatalf("start: %s", describe(g))
	}
	return s
}

// Every adapter, end to end on ring with gdb: launch, break, run, one
// merged stop, stacks, kill, a clean exit, and no process left behind.
func TestAdaptersEndToEnd(t *testing.T) {
	bin := testenv.Examples(t)
	const n = 4
	all := wire.All(n)
	for _, a := range adapters(t) {
		t.Run(a.rm, func(t *testing.T) {
			s := a.launch(t, bin, n)
			dir := s.Dir
			if g := command(t, s.Command, all, wire.OpBreak, wire.MustEncode(wire.Break{Location: "pass"})); len(g) != 1 || g[0].Status != wire.StatusOK {
				t.Fatalf("break: %s", describe(g))
			}
			command(t, s.Command, all, wire.OpRun, nil)
			for _, st := range stoppedAll(t, s.Session, all) {
				if st.Breakpoint != 1 || st.Frame.Func != "pass" || st.Frame.Line != 8 {
					t.Fatalf("stop: %+v", st)
				}
			}
			roots, err := console.BuildStackTree(command(t, s.Command, all, wire.OpWhere, nil))
			if err != nil || len(roots) != 1 || !roots[0].Ranks.Equal(all) || findFrame(roots, "pass") == nil {
				t.Fatalf("stacks: %v\n%s", err, console.DOT(roots))
			}
			command(t, s.Command, all, wire.OpKill, nil)
			if err := s.End(20 * time.Second); err != nil {
				t.Fatalf("end: %v", err)
			}
			if _, err := os.Stat(dir); !os.IsNotExist(err) {
				t.Errorf("the session directory %s is still there", dir)
			}
			noStrays(t, dir)
		})
	}
}

// noStrays fails the test if a process of the session (server, master,
// launcher, gdb, program) is still there after a few seconds.
func noStrays(t *testing.T, dir string) {
	t.Helper()
	marker := []byte(launcher.SessionEnv + "=" + dir + "\x00")
	deadline := time.Now().Add(10 * time.Second)
	for {
		strays := sessionProcesses(marker)
		if len(strays) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("processes of the session still running 10s after it ended:\n%s", strings.Join(strays, "\n"))
		}
		time.Sleep(50 * time.Millisecond) // polling the process table: there is no event for a process ending elsewhere
	}
}

func sessionProcesses(marker []byte) []string {
	var found []string
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		env, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
		if err != nil || !bytes.Contains(env, marker) {
			continue
		}
		stat, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if f := strings.Fields(string(stat)); len(f) > 2 && f[2] == "Z" {
			continue // dead, waiting for its parent to reap it
		}
		cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		found = append(found, fmt.Sprintf("%d %s", pid, bytes.ReplaceAll(cmdline, []byte{0}, []byte{' '})))
	}
	return found
}

// Failures before anything runs are reported before anything is
// submitted, naming the host and the path.
func TestLaunchChecks(t *testing.T) {
	bin := testenv.Examples(t)
	testenv.RequireTool(t, "gdb")
	host, _ := os.Hostname()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, tc := range []struct {
		name string
		o    launcher.Options
		want string
	}{
		{"launcher missing", launcher.Options{RM: "openmpi", Launcher: "/no/such/mpirun", Program: filepath.Join(bin, "ring")},
			"on " + host + ": /no/such/mpirun, the launcher of --rm openmpi, is not installed"},
		{"program missing", launcher.Options{RM: "local", Program: "/no/such/program"},
			"on " + host + ": the program /no/such/program does not exist"},
		{"program not executable", launcher.Options{RM: "local", Program: "/etc/passwd"},
			"the program /etc/passwd is not executable"},
		{"sdm missing", launcher.Options{RM: "local", SDM: "/no/such/sdm", Program: filepath.Join(bin, "plain")},
			"the sdm binary /no/such/sdm does not exist"},
		{"no such resource manager", launcher.Options{RM: "lsf"}, "--rm lsf: no such resource manager"},
	} {
		o := tc.o
		o.Size, o.Debugger = 2, "gdb-mi"
		if o.SDM == "" {
			o.SDM = sdmBin
		}
		_, err := launcher.Launch(ctx, o)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
}

// A job that fails to start is reported with the launcher's own words.
func TestJobFailsToStart(t *testing.T) {
	testenv.RequireTool(t, "mpirun.openmpi", "mpirun")
	bin := testenv.Examples(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	// More ranks than this machine has cores, without --oversubscribe.
	o := adapter{rm: "openmpi", program: "ring"}.options(bin, 64)
	_, err := launcher.Launch(ctx, o)
	if err == nil || !strings.Contains(err.Error(), "not enough slots available") {
		t.Fatalf("mpirun without slots: %v", err)
	}
	// The logs sdm names are there, and stay there when the next session
	// clears away those of sessions whose process is gone.
	_, stderr, code := run(t, "", "debug", "--rm", "openmpi", "-n", "64", "-e", "run", "--", filepath.Join(bin, "ring"))
	_, kept, ok := strings.Cut(stderr, "(logs kept in ")
	kept, _, _ = strings.Cut(kept, ")")
	if code == 0 || !ok || !strings.HasPrefix(kept, os.TempDir()) {
		t.Fatalf("exit %d, no logs named: %s", code, stderr)
	}
	defer os.RemoveAll(kept)
	if out, stderr, code := run(t, "", "debug", "-n", "1", "-e", "run", "-e", "wait", "--", "/bin/true"); code != 0 {
		t.Fatalf("the next session: exit %d\n%s%s", code, out, stderr)
	}
	if _, err := os.Stat(filepath.Join(kept, "servers.log")); err != nil {
		t.Errorf("the logs named are not there after the next session began: %v", err)
	}
}

// Servers that never show up: the wait ends at its deadline, naming the
// servers missing.
func TestServersNeverPublish(t *testing.T) {
	bin := testenv.Examples(t)
	fake := filepath.Join(t.TempDir(), "mpirun")
	// A launcher that accepts the job and never starts it.
	os.WriteFile(fake, []byte("#!/bin/sh\nexec sleep 30\n"), 0o755)
	o := adapter{rm: "openmpi", program: "plain", launcher: fake}.options(bin, 3)
	o.ConnectTimeout = 2 * time.Second
	start := time.Now()
	_, err := launcher.Launch(context.Background(), o)
	if err == nil || !strings.Contains(err.Error(), "0 of 3 servers published; missing 0, 1, 2") {
		t.Fatalf("servers that never came: %v", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("gave up after %v, want about 2s", d)
	}
}

// A rank whose program ends early is reported so, and the others go on.
func TestRankExitsEarly(t *testing.T) {
	bin := testenv.Examples(t)
	const n = 4
	s := adapter{rm: "openmpi", program: "plain", args: []string{"--oversubscribe"}}.launch(t, bin, n)
	all := wire.All(n)
	command(t, s.Command, all, wire.OpBreak, wire.MustEncode(wire.Break{Location: "special"}))
	command(t, s.Command, all, wire.OpRun, nil)
	// Ranks 0-2 never reach special: they exit; rank 3 stops.
	var exited, stopped wire.RankSet
	events(t, s.Session, func(ev client.Event) bool {
		switch ev.Op {
		case wire.EventExited:
			exited = exited.Union(ev.Group.Ranks)
		case wire.EventStopped:
			stopped = stopped.Union(ev.Group.Ranks)
		}
		return exited.Count() == 3 && stopped.Count() == 1
	})
	if exited.String() != "0-2" || stopped.String() != "3" {
		t.Fatalf("exited %v, stopped %v", exited, stopped)
	}
	if got := describe(command(t, s.Command, wire.Single(3), wire.OpWhere, nil)); got != "[3] ok special; " {
		t.Fatalf("where on the rank still there: %s", got)
	}
	command(t, s.Command, all, wire.OpCont, nil)
	dir := s.Dir
	if err := s.End(20 * time.Second); err != nil {
		t.Fatal(err)
	}
	noStrays(t, dir)
}

// mpirun killed in the middle of a session: the servers it started go on
// (the tree does not depend on it), the session still answers and ends
// cleanly, and nothing is left behind.
func TestLauncherKilledMidSession(t *testing.T) {
	bin := testenv.Examples(t)
	const n = 2
	s := adapter{rm: "openmpi", program: "ring", args: []string{"--oversubscribe"}}.launch(t, bin, n)
	all := wire.All(n)
	command(t, s.Command, all, wire.OpBreak, wire.MustEncode(wire.Break{Location: "pass"}))
	command(t, s.Command, all, wire.OpRun, nil)
	stoppedAll(t, s.Session, all)
	syscall.Kill(s.Job.(interface{ Pid() int }).Pid(), syscall.SIGKILL)
	<-s.Job.Done()
	if err := s.Job.Wait(); err == nil || !strings.Contains(err.Error(), "killed") {
		t.Fatalf("the job after mpirun was killed: %v", err)
	}
	if g := command(t, s.Command, all, wire.OpStatus, nil); !okRanks(g).Equal(all) {
		t.Fatalf("status after mpirun died: %s", describe(g))
	}
	dir := s.Dir
	if err := s.End(20 * time.Second); err != nil {
		t.Fatalf("end: %v", err)
	}
	noStrays(t, dir)
}
