package integration

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sdm-hpc/sdm/backend"
	"github.com/sdm-hpc/sdm/backend/program"
	"github.com/sdm-hpc/sdm/launcher"
	"github.com/sdm-hpc/sdm/testkit/testenv"
	"github.com/sdm-hpc/sdm/wire"
)

// gdbsOf counts the gdb processes of the session in dir: every process
// of a session carries it in its environment.
func gdbsOf(t testing.TB, dir string) int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	mark := []byte(launcher.SessionEnv + "=" + dir + "\x00")
	n := 0
	for _, e := range entries {
		comm, err := os.ReadFile(filepath.Join("/proc", e.Name(), "comm"))
		if err != nil || strings.TrimSpace(string(comm)) != "gdb" {
			continue
		}
		env, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err == nil && bytes.Contains(env, mark) {
			n++
		}
	}
	return n
}

// decoded are the bodies of the groups that answered well.
func decoded[T any](t *testing.T, groups []wire.Group) []T {
	t.Helper()
	var out []T
	for _, g := range groups {
		if g.Status != wire.StatusOK {
			continue
		}
		var v T
		if err := wire.Decode(g.Body, &v); err != nil {
			t.Fatal(err)
		}
		out = append(out, v)
	}
	return out
}

// lazyPlain launches n lazy rank servers on the local launcher and runs
// examples/plain in each (it sleeps secs seconds before it ends).
func lazyPlain(ctx context.Context, t *testing.T, n int, secs string) *launcher.Session {
	t.Helper()
	testenv.RequireTool(t, "gdb")
	bin := testenv.Examples(t)
	s, err := launcher.Launch(ctx, launcher.Options{Size: n, Debugger: backend.GDB, GDB: backend.Lazy, SDM: sdmBin, ConnectTimeout: 2 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.End(30 * time.Second) })
	all := wire.All(n)
	body := wire.MustEncode(wire.Start{Program: filepath.Join(bin, "plain"), Args: []string{secs}})
	if g := command(t, s.Command, all, wire.OpStart, body); !okRanks(g).Equal(all) {
		t.Fatalf("start: %s", describe(g))
	}
	if g := command(t, s.Command, all, wire.OpRun, nil); !okRanks(g).Equal(all) {
		t.Fatalf("run: %s", describe(g))
	}
	return s
}

// Lazy servers launched for a program read its modules ahead from their
// start, before any command: the launcher names the program (--prepare),
// and the host's first server to claim it fills the host's cache with the
// program's, its loader's and the C library's entries and marks it done.
func TestLazyServersPrepareTheProgram(t *testing.T) {
	testenv.RequireTool(t, "gdb")
	cache := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", cache)
	prog := filepath.Join(testenv.Examples(t), "plain")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	s, err := launcher.Launch(ctx, launcher.Options{Size: 4, Debugger: backend.GDB, GDB: backend.Lazy, SDM: sdmBin, Program: prog, ConnectTimeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer s.End(30 * time.Second)
	modules := filepath.Join(cache, "sdm", "modules")
	deadline := time.Now().Add(time.Minute)
	for {
		var marks []string
		files, _ := filepath.Glob(filepath.Join(modules, "prepared", "*"))
		for _, f := range files {
			if !strings.HasSuffix(f, ".lock") {
				marks = append(marks, f)
			}
		}
		if len(marks) == 1 {
			break
		}
		if len(marks) > 1 || time.Now().After(deadline) {
			t.Fatalf("prepared marks %v a minute after the launch, want one", marks)
		}
		time.Sleep(50 * time.Millisecond) // a file the servers write sends no event here
	}
	entries, _ := filepath.Glob(filepath.Join(modules, "*", "symbols-*"))
	if len(entries) < 3 {
		t.Fatalf("symbol entries of the program, its loader and libc: %v", entries)
	}
}

// 256 ranks started and sampled without a single gdb; a break on some
// ranks starts the gdbs they need (one for up to --ranks-per-gdb of them),
// which attach to the running processes, plant the breakpoint and let
// them go on.
func TestLazyStacksStartNoGDB(t *testing.T) {
	const n = 256
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	s := lazyPlain(ctx, t, n, "60")
	all := wire.All(n)
	// The first sample of each server reads the program's modules (the C
	// library's debug file the longest): 256 servers do so on a node's few
	// cores at once, and one may go unscheduled, unheard, for longer than
	// a command waits for a silent server (sdm.DefaultNotResponding). On
	// those cores a rank may also still be in the dynamic loader when it
	// is sampled, a true stack that does not reach main yet. The ranks of
	// either kind are asked again until every rank is down to main.
	for ask := all; !ask.Empty(); {
		g, err := s.Command(ctx, ask, wire.OpWhere, nil, 3*time.Minute)
		if err != nil {
			t.Fatalf("where on running ranks %v: %v", ask, err)
		}
		ask = groupsWith(g, wire.StatusTimeout)
		for _, grp := range g {
			if grp.Status == wire.StatusTimeout {
				continue
			}
			var st wire.Stack
			if grp.Status != wire.StatusOK || wire.Decode(grp.Body, &st) != nil {
				t.Fatalf("where on running ranks: %s", describe(g))
			}
			if len(st.Frames) == 0 || st.Frames[len(st.Frames)-1].Func != "main" {
				ask = ask.Union(grp.Ranks)
				t.Logf("where: %v not down to main yet: %+v", grp.Ranks, st.Frames)
			}
		}
		if !ask.Empty() {
			t.Logf("where: %v asked again", ask)
			select {
			case <-ctx.Done():
				t.Fatalf("ranks %v never answered where with a stack down to main", ask)
			case <-time.After(100 * time.Millisecond):
			}
		}
	}
	tree := command(t, s.Command, all, wire.OpSample, wire.MustEncode(wire.Sample{Count: 2, Interval: 10 * time.Millisecond}))
	if !okRanks(tree).Equal(all) {
		t.Fatalf("sample: %s", describe(tree))
	}
	if got := gdbsOf(t, s.Dir); got != 0 {
		t.Fatalf("%d gdbs after run and stacks, want none", got)
	}
	some := wire.Range(0, 3)
	if g := command(t, s.Command, some, wire.OpBreak, wire.MustEncode(wire.Break{Location: "rest"})); !okRanks(g).Equal(some) {
		t.Fatalf("break: %s", describe(g))
	}
	per := backend.RanksPerGDB()
	if got, want := gdbsOf(t, s.Dir), (some.Count()+per-1)/per; got != want {
		t.Fatalf("%d gdbs after a break on %s, want %d (%d ranks a gdb)", got, some, want, per)
	}
	// The ranks under gdb run on; the others still answer without one.
	for _, st := range decoded[wire.State](t, command(t, s.Command, some, wire.OpStatus, nil)) {
		if st.State != wire.StateRunning {
			t.Fatalf("status of a rank given to gdb: %+v, want running", st)
		}
	}
	rest := wire.Range(4, n-1)
	if g := command(t, s.Command, rest, wire.OpWhere, nil); !okRanks(g).Equal(rest) {
		t.Fatalf("where on the ranks without gdb: %s", describe(g))
	}
}

// halt, status, continue and kill without gdb: a halted rank is stopped
// by SIGSTOP where a sample finds it, and stays so until continue.
func TestLazySignals(t *testing.T) {
	const n = 2
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s := lazyPlain(ctx, t, n, "60")
	all := wire.All(n)
	command(t, s.Command, all, wire.OpHalt, nil)
	var stopped wire.RankSet
	for !stopped.Equal(all) {
		ev, err := s.NextEvent(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if ev.Op == wire.EventStopped {
			var st wire.State
			if err := wire.Decode(ev.Group.Body, &st); err != nil || st.Signal != "SIGSTOP" || st.Frame.Func == "" {
				t.Fatalf("stop event %+v (%v), want a SIGSTOP with the frame", st, err)
			}
			stopped = stopped.Union(ev.Group.Ranks)
		}
	}
	for _, st := range decoded[wire.State](t, command(t, s.Command, all, wire.OpStatus, nil)) {
		if st.State != wire.StateStopped || st.Signal != "SIGSTOP" {
			t.Fatalf("status after halt: %+v, want stopped by SIGSTOP", st)
		}
	}
	if g := command(t, s.Command, all, wire.OpCont, nil); !okRanks(g).Equal(all) {
		t.Fatalf("continue: %s", describe(g))
	}
	for _, st := range decoded[wire.State](t, command(t, s.Command, all, wire.OpStatus, nil)) {
		if st.State != wire.StateRunning {
			t.Fatalf("status after continue: %+v, want running", st)
		}
	}
	for _, st := range decoded[wire.State](t, command(t, s.Command, all, wire.OpKill, nil)) {
		if st.State != wire.StateExited || st.Reason != "killed" {
			t.Fatalf("kill: %+v", st)
		}
	}
	if g := command(t, s.Command, all, wire.OpWhere, nil); okRanks(g).Count() != 0 || !strings.Contains(describe(g), "not being run") {
		t.Fatalf("where after kill: %s", describe(g))
	}
	if got := gdbsOf(t, s.Dir); got != 0 {
		t.Fatalf("%d gdbs, want none", got)
	}
}

// sdm attach to a running Open MPI job samples its running ranks
// without gdb (the default --gdb lazy): stacks needs no halt, and the
// ranks run on through it and after the detach.
func TestAttachLazyOpenMPIRunning(t *testing.T) {
	const n = 4
	pid := hungMpirun(t, n)
	out, stderr, code := run(t, "", "attach", "--starter", strconv.Itoa(pid), "-e", "stacks", "-e", "status", "-e", "detach")
	if code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out, stderr)
	}
	for _, want := range []string{"[0-3] attached: running", "[3] compute at ", "hang.c:12 (1 rank)", "[0-3] running", "[0-3] detached"} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in:\n%s", want, out)
		}
	}
	for _, rank := range rankPids(t, pid, n) {
		if f := program.StatFields(fmt.Sprintf("/proc/%d/stat", rank)); len(f) == 0 || f[0] == "T" || f[0] == "t" || f[0] == "Z" {
			t.Errorf("rank process %d after the detach: state %v, want running", rank, f)
		}
	}
	// Why it hangs, from the stacks of the job that runs on.
	out, stderr, code = run(t, "", "stacks", "--starter", strconv.Itoa(pid), "--deadlock", "--samples", "2", "--interval", "20ms")
	if code != 0 {
		t.Fatalf("sdm stacks --deadlock: exit %d\n%s%s", code, out, stderr)
	}
	// The ranks' queues, read through Open MPI's own library, name the
	// peer the waits lead to; the stacks alone, that they likely lead
	// there.
	diagnosis := "diagnosis: rank 3 is outside MPI while ranks 0-2 wait: the waits likely lead there (the root of the hang)\n"
	if libmpiTyped(t) {
		diagnosis = "diagnosis: ranks 0-2 wait for rank 3, which is not in MPI: in compute at examples/hang/hang.c:12\n"
	}
	for _, want := range []string{"ranks 0-2 wait in MPI_Recv at examples/hang/hang.c:27 (main)\n",
		"rank 3 is not waiting in MPI: in compute at examples/hang/hang.c:12", diagnosis} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in:\n%s", want, out)
		}
	}
	free(t, append([]int{pid}, rankPids(t, pid, n)...)...)
}
