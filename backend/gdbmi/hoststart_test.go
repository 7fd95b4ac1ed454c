package gdbmi_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sdm-hpc/sdm/backend"
	"github.com/sdm-hpc/sdm/backend/gdbmi"
	"github.com/sdm-hpc/sdm/internal/inherit"
	"github.com/sdm-hpc/sdm/testkit/testenv"
	"github.com/sdm-hpc/sdm/wire"
)

// A shared gdb starts a program through its wrapper only when the
// program is to get descriptors, and through the shell only when its
// arguments need one; either way it gets its arguments and environment
// as given, without the wrapper's variable.
func TestSharedGDBStartsDirectlyWhenItCan(t *testing.T) {
	testenv.RequireTool(t, "gdb")
	dir := t.TempDir()
	log, wrapper := filepath.Join(dir, "log"), filepath.Join(dir, "wrap")
	script := "#!/bin/sh\necho \"$SDM_INHERIT\" >> " + log + "\nexec \"$@\"\n"
	if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	// gdb starts programs through $SHELL.
	shells, shell := filepath.Join(dir, "shells"), filepath.Join(dir, "sh")
	script = "#!/bin/sh\necho shell >> " + shells + "\nexec /bin/sh \"$@\"\n"
	if err := os.WriteFile(shell, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("SHELL", shell)
	pool := &gdbmi.Pool{PerGDB: 3, Wrapper: wrapper, Start: func(context.Context) (*gdbmi.GDB, error) { return gdbmi.Start("gdb") }}
	self := os.Getpid()
	cases := []struct {
		inherit, program string
		args             []string
		want             string
	}{
		{inherit.Value(self, nil), "/usr/bin/env", nil, "SDM_RANK=0"},
		{inherit.Value(self, nil), "/usr/bin/printf", []string{"<%s> <%s>", "x  y", "$HOME"}, "<x  y> <$HOME>"},
		{inherit.Value(self, []int{5}), "/usr/bin/printf", []string{"<%s>", "plain"}, "<plain>"},
	}
	var ranks []*rank
	for i, c := range cases {
		env := append(os.Environ(), inherit.Env+"="+c.inherit)
		r := &rank{t: t, b: gdbmi.NewShared(backend.Config{Rank: i, Size: len(cases)}, pool, gdbmi.Share{Env: env})}
		t.Cleanup(func() { r.b.Close() })
		r.start(c.program, c.args...)
		ranks = append(ranks, r)
	}
	for _, r := range ranks {
		r.must(wire.OpRun, nil, nil)
	}
	for i, r := range ranks {
		if st := r.event(wire.EventExited); st.Code != 0 || !strings.Contains(r.output.String(), cases[i].want) {
			t.Errorf("rank %d: %+v, output %q, want %q", i, st, r.output.String(), cases[i].want)
		}
	}
	if strings.Contains(ranks[0].output.String(), inherit.Env) {
		t.Errorf("rank 0, started directly, has %s: %q", inherit.Env, ranks[0].output.String())
	}
	// Rank 1's arguments need the shell, and so does rank 2's wrapper.
	if got, _ := os.ReadFile(shells); string(got) != "shell\nshell\n" {
		t.Errorf("the shell started %d programs, want 2 (ranks 1 and 2)", strings.Count(string(got), "shell"))
	}
	// Only rank 2's program has descriptors to get.
	if got, _ := os.ReadFile(log); string(got) != inherit.Value(self, []int{5})+"\n" {
		t.Errorf("the wrapper started the programs of %q, want rank 2's alone", got)
	}
}
