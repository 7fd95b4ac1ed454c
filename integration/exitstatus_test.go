package integration

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/sdm-hpc/sdm/testkit/testenv"
)

// --exit-status program: sdm exits as the ranks' program did, its worst
// exit status, 128 + the signal's number for a rank a signal ended; the
// errors of the ranks' answers count for nothing then.
func TestExitStatusProgram(t *testing.T) {
	testenv.RequireTool(t, "gdb")
	bin := testenv.Examples(t)
	plain := []string{"--", filepath.Join(bin, "plain")}
	args := func(extra ...string) []string {
		a := append([]string{"debug", "-n", "2", "--rm", "local", "--timeout", "60s"}, extra...)
		return append(a, plain...)
	}
	// The same failed print: sdm's status says it, the program's does not.
	script := []string{"-e", "print nosuch", "-e", "run", "-e", "wait"}
	if out, stderr, code := run(t, "", args(script...)...); code != 1 {
		t.Errorf("--exit-status sdm (the default) after a failed print: exit %d, want 1\n%s\n%s", code, out, stderr)
	}
	if out, stderr, code := run(t, "", args(append([]string{"--exit-status", "program"}, script...)...)...); code != 0 {
		t.Errorf("--exit-status program, every rank exited 0: exit %d, want 0\n%s\n%s", code, out, stderr)
	}
	// Ranks that never ran did not end: the program did not succeed.
	if _, stderr, code := run(t, "", args("--exit-status", "program", "-e", "status")...); code != 1 || !strings.Contains(stderr, "[0-1] had not ended when the session did") {
		t.Errorf("ranks never run: exit %d, want 1\n%s", code, stderr)
	}

	// Rank 1 of crash dies of SIGSEGV (gdb lets the signal through); rank
	// 0 still runs when the session ends.
	out, stderr, code := run(t, "", "debug", "-n", "2", "--exit-status", "program", "--timeout", "60s",
		"-e", "handle SIGSEGV nostop noprint pass", "-e", "run", "-e", "[1] wait", "--", filepath.Join(bin, "crash"))
	if code != 128+11 || !strings.Contains(stderr, "[1] killed by SIGSEGV") {
		t.Errorf("a rank killed by SIGSEGV: exit %d, want 139\n%s\n%s", code, out, stderr)
	}
}

// Every flag that takes one of a list of values refuses another as a
// usage error (exit 2), before anything starts.
func TestBadFlagValuesAreUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{"debug", "--rm", "openmpy", "--", "ring"},
		{"debug", "--debugger", "lldb", "--", "ring"},
		{"debug", "--backend", "lldb", "--", "ring"},
		{"debug", "--dlopen-mode", "turbo", "--debugger", "sim", "--", "ring"},
		{"debug", "--exit-status", "always", "--debugger", "sim", "--", "ring"},
		{"attach", "--pid", "1", "--exit-status", "always"},
		{"listen", "--accept-all", "--exit-status", "always"},
		{"report", "--on-crash", "maybe", "--out", "x.html", "--", "ring"},
		{"report", "--on-hang", "stop", "--out", "x.html", "--", "ring"},
		{"report", "--", "ring"},
		{"report", "--trace-at", "main,f(x", "--out", "x.html", "--", "ring"},
		{"report", "--pid", "1", "--slurm", "2.0", "--out", "x.html"},
	} {
		_, stderr, code := run(t, "", args...)
		if code != 2 || stderr == "" {
			t.Errorf("%v: exit %d, %q; want 2 and why", args, code, stderr)
		}
	}
}
