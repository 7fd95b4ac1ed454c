package integration

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sdm-hpc/sdm/backend"
	"github.com/sdm-hpc/sdm/launcher"
	"github.com/sdm-hpc/sdm/testkit/testenv"
	"github.com/sdm-hpc/sdm/wire"
)

// sessionGDBs counts the gdbs of a session: the processes called gdb
// whose environment names its directory.
func sessionGDBs(t *testing.T, dir string) int {
	t.Helper()
	return len(testenv.Procs("gdb", launcher.SessionEnv+"="+dir, false))
}

// Sixteen ranks on two gdbs of eight, through the whole tree: a merged
// stop at a breakpoint fifteen ranks pass, each rank's own values, the
// odd ranks stepping while the even ones run to their ends, and a look at
// ranks that run, which leaves them running.
func TestSharedGDBsUnderLocalLauncher(t *testing.T) {
	testenv.RequireTool(t, "gdb")
	bin := testenv.Examples(t)
	const n = 16
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	s, err := launcher.Launch(ctx, launcher.Options{Size: n, Debugger: backend.GDB, GDB: backend.Eager, RanksPerGDB: 8, SDM: sdmBin})
	if err != nil {
		t.Fatal(err)
	}
	defer s.End(30 * time.Second)
	all := wire.All(n)
	stopping := all.Minus(wire.Single(n - 1))
	command(t, s.Command, all, wire.OpStart, wire.MustEncode(wire.Start{Program: filepath.Join(bin, "plain")}))
	if got := sessionGDBs(t, s.Dir); got != 2 {
		t.Fatalf("%d gdbs for 16 ranks, 8 a gdb", got)
	}
	command(t, s.Command, all, wire.OpBreak, wire.MustEncode(wire.Break{Location: "compute"}))
	command(t, s.Command, all, wire.OpRun, nil)
	var stopped, exited wire.RankSet
	for !stopped.Union(exited).Equal(all) {
		ev, err := s.NextEvent(ctx)
		if err != nil {
			t.Fatalf("stopped %v, exited %v: %v", stopped, exited, err)
		}
		switch ev.Op {
		case wire.EventStopped:
			stopped = stopped.Union(ev.Group.Ranks)
		case wire.EventExited:
			exited = exited.Union(ev.Group.Ranks)
		}
	}
	if !stopped.Equal(stopping) {
		t.Fatalf("stopped %v, exited %v", stopped, exited)
	}
	g := command(t, s.Command, stopping, wire.OpPrint, wire.MustEncode(wire.Expr{Expr: "rank"}))
	if len(g) != n-1 {
		t.Fatalf("print rank: %s", describe(g))
	}
	var odd, even wire.RankSet
	for r := range n - 1 {
		if r%2 == 1 {
			odd = odd.Union(wire.Single(r))
		} else {
			even = even.Union(wire.Single(r))
		}
	}
	command(t, s.Command, even, wire.OpCont, nil)
	command(t, s.Command, odd, wire.OpNext, wire.MustEncode(wire.Count{N: 1}))
	var stepped, ended wire.RankSet
	for !stepped.Equal(odd) || !ended.Equal(even) {
		ev, err := s.NextEvent(ctx)
		if err != nil {
			t.Fatalf("stepped %v, ended %v: %v", stepped, ended, err)
		}
		switch ev.Op {
		case wire.EventStopped:
			var st wire.State
			wire.Decode(ev.Group.Body, &st)
			if st.Frame.Line != 16 || !ev.Group.Ranks.Minus(odd).Empty() {
				t.Fatalf("%v stopped: %+v", ev.Group.Ranks, st)
			}
			stepped = stepped.Union(ev.Group.Ranks)
		case wire.EventExited:
			ended = ended.Union(ev.Group.Ranks)
		}
	}
	g = command(t, s.Command, odd, wire.OpPrint, wire.MustEncode(wire.Expr{Expr: "value"}))
	if len(g) != 1 || !strings.Contains(describe(g), "1") {
		t.Fatalf("print value on the odd ranks: %s", describe(g))
	}

	// Run again with a pause at the end, and look at the running ranks.
	command(t, s.Command, odd, wire.OpKill, nil)
	command(t, s.Command, all, wire.OpStart, wire.MustEncode(wire.Start{Program: filepath.Join(bin, "plain"), Args: []string{"30"}}))
	command(t, s.Command, all, wire.OpDelete, wire.MustEncode(wire.IDs{}))
	command(t, s.Command, all, wire.OpRun, nil)
	wrote(ctx, t, s, all, "hello")
	g = command(t, s.Command, all, wire.OpWhere, nil)
	for _, st := range decoded[wire.Stack](t, g) {
		if !okRanks(g).Equal(all) || !slices.ContainsFunc(st.Frames, func(f wire.Frame) bool { return f.Func == "rest" }) {
			t.Fatalf("where of running ranks: %s %+v", describe(g), st)
		}
	}
	for _, st := range decoded[wire.State](t, command(t, s.Command, all, wire.OpStatus, nil)) {
		if st.State != wire.StateRunning {
			t.Fatalf("status after a look: %+v", st)
		}
	}
}
