package integration

import (
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/sdm-hpc/sdm/op"
	"github.com/sdm-hpc/sdm/testkit/testenv"
	"github.com/sdm-hpc/sdm/wire"
)

// habits runs plain on three ranks under gdb (ranks 0-1 through compute,
// rank 2 through special), stopped at both, with the commands given, and
// returns the output, standard error and exit code.
func habits(t *testing.T, commands ...string) (string, string, int) {
	t.Helper()
	testenv.RequireTool(t, "gdb")
	bin := testenv.Examples(t)
	flags, _ := watchpoints() // TestCommandPrefixes sets one
	args := append([]string{"debug", "-n", "3"}, flags...)
	args = append(args, "-e", "break compute", "-e", "break special", "-e", "run", "-e", "wait")
	for _, c := range commands {
		args = append(args, "-e", c)
	}
	return run(t, "", append(args, "--", filepath.Join(bin, "plain"))...)
}

// wantAll fails for each of wants that out lacks.
func wantAll(t *testing.T, out string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(out, w) {
			t.Errorf("output lacks %q:\n%s", w, out)
		}
	}
}

// gdb's info and its subcommands, each the answer of the op sdm has for
// it, or of a new one (frame, registers, sharedlibrary), by prefix too.
func TestInfoSubcommands(t *testing.T) {
	out, stderr, code := habits(t, "info", "help info", "info locals", "i args", "info b", "info threads",
		"[0] info frame", "[0] i r rip", "[2] info sharedlibrary", "info signals", "info display", "info nosuch")
	if code != 2 || !strings.Contains(stderr, `unknown info subcommand "nosuch"`) {
		t.Errorf("exit %d, want 2 for the unknown subcommand: %s", code, stderr)
	}
	wantAll(t, out,
		"info SUBCOMMAND, a prefix of one (info b, info reg) or one of these:\n    info args ",
		"[SET] info SUBCOMMAND\n", "    info sharedlibrary, dll ", "    also: i\n",
		"[0] rank = 0\n", "[2] rank = 2\n", "[0-1] size = 3\n", // info args, merged one variable at a time
		"[0-2] breakpoint 1 at examples/plain/plain.c:15 in compute\n",
		"[0-1] * 1 plain stopped in compute at examples/plain/plain.c:15\n",
		"[0] Stack level 0, frame at 0x", " in compute (examples/plain/plain.c:15); saved rip = 0x",
		"[0] rip            0x",
		"[2] From                To                  Syms Read   Shared Object Library\n", "/libc.so.6\n",
		"[0-2] Signal        Stop\tPrint\tPass to program\tDescription\n",
		"There are no auto-display expressions now.\n",
	)
	if !regexp.MustCompile(`\[0-2\] value = -?\d+\n`).MatchString(out) {
		t.Errorf("info locals did not merge compute's and special's value:\n%s", out)
	}
}

// bt as gdb's: numbered frames with arguments, merged across ranks whose
// stacks differ only in values; bt N, bt -N, bt full; up, down and frame
// per rank; list around the selected frame, then on, and list FUNC and
// FILE:N, one listing for ranks at the same place.
func TestBacktraceFramesAndList(t *testing.T) {
	out, stderr, code := habits(t, "bt", "where 1", "bt -1", "[2] bt full", "up", "list", "list", "down", "frame",
		"[0] up 5", "[0] up", "list compute", "list plain.c:43,44", "down")
	if code != 1 {
		t.Errorf("exit %d, want 1 for the ranks that cannot go up or down: %s", code, stderr)
	}
	wantAll(t, out,
		// argv is an address on the stack, the same in ranks whose
		// environments have the same length: not always so (seen on
		// fresh machines), so either reads right.
		"[0-1] #0  compute (rank=<2 values>, size=3) at examples/plain/plain.c:15\n      #1  main (argc=1, argv=",
		"[2] #0  special (rank=2) at examples/plain/plain.c:22\n    #1  main (argc=1, argv=0x",
		"[0-1] #0  compute (rank=<2 values>, size=3) at examples/plain/plain.c:15\n      (More stack frames follow...)\n",
		") at examples/plain/plain.c:40\n", // bt -1 of rank 2: main only
		"[2] #0  special (rank=2) at examples/plain/plain.c:22\n            value = ",
		// result is not set yet: whatever the stack held (0 on Debian 12,
		// other values on Debian 13).
		"            rank = 2\n            size = 3\n            result = ",
		"[0-1] #1  main at examples/plain/plain.c:42\n      42\t        result = compute(rank, size);\n",
		"[2] #1  main at examples/plain/plain.c:40\n    40\t        result = special(rank);\n",
		"[0-1] 37\t    int result;\n", // list around line 42
		"[2] 35\t    const char *r",   // list around line 40
		"[0-1] 47\t    return 0;\n      48\t}\n",
		"[0-1] #0  compute at examples/plain/plain.c:15\n      15\t    int value = rank % 2;",
		"[0] #1  main at examples/plain/plain.c:42\n", // up 5: as far as there is
		"[0] error: Initial frame selected; you cannot go up.\n",
		"[0-2] 9\t\n      10\tint counter;", // list compute: one listing
		"[0-2] 43\t    printf(", "      44\t    fflush(stdout);\n",
		"[1-2] error: Bottom (innermost) frame selected; you cannot go down.\n",
	)
	if strings.Count(out, "[0-1] #0  compute (rank=<2 values>") != 2 {
		t.Errorf("bt and where 1: want compute's merged frame twice:\n%s", out)
	}
}

// display shows at every stop, merged by value, and not outside its
// function; undisplay and info display; delete 9 says there is none;
// delete alone deletes all in a script, without asking.
func TestDisplayAndDelete(t *testing.T) {
	out, stderr, code := habits(t, "display value", "[0-1] disp size", "info display", "next", "undisplay 2",
		"next", "finish", "undisplay 7", "delete 9", "delete", "info breakpoints", "cont", "wait")
	if code != 2 || !strings.Contains(stderr, "undisplay: no display 7") {
		t.Errorf("exit %d, want 2 for undisplay 7: %s", code, stderr)
	}
	wantAll(t, out,
		"[0-1] 2: size = 3\n",
		"Auto-display expressions now in effect:\n1: value  [0-2]\n2: size  [0-1]\n",
		"[2] stopped in special at examples/plain/plain.c:23 (end-stepping-range)\n",
		"[0] 1: value = 0\n[1] 1: value = 1\n[2] 1: value = 200\n[0-1] 2: size = 3\n",
		"[0-2] error: No breakpoint number 9.\n",
		"[0-2] no breakpoints\n",
		"exited with code 0\n",
	)
	if strings.Count(out, "2: size = 3") != 2 {
		t.Errorf("undisplay 2 did not end display 2:\n%s", out)
	}
	if strings.Count(out, "1: value = 200\n") != 2 || strings.Contains(out, "1: value: No symbol") {
		t.Errorf("display 1 did not show at both steps, or showed outside its function:\n%s", out)
	}
}

// gdb's short forms and unique prefixes, an ambiguous prefix, a typo.
func TestCommandPrefixes(t *testing.T) {
	out, stderr, code := habits(t, "p rank", "i lo", "bt 1", "n", "s", "fin", "wat counter", "cont", "wait",
		"con", "contnue", "whre")
	if code != 2 {
		t.Errorf("exit %d, want 2 for the commands typed wrong: %s", code, stderr)
	}
	wantAll(t, stderr, `ambiguous command "con": condition, continue`,
		`unknown command "contnue": did you mean "continue"?`, `unknown command "whre": did you mean "where"?`)
	wantAll(t, out, "[0] rank = 0\n", "[0-2] value = ", "(More stack frames follow...)",
		"stopped in compute at examples/plain/plain.c:16 (end-stepping-range)",
		"(function-finished)", "[0-2] write watchpoint 3 on counter\n")
}

// The names the console completes break and list with: the program's
// functions and files with debug information, from one rank's gdb under
// mpirun (the program loaded, not run yet).
func TestSymbolsForCompletion(t *testing.T) {
	cs := gdbTree(t, 2, "ring")
	groups := command(t, cs.Command, wire.Single(0), wire.OpSymbols, nil)
	if len(groups) != 1 || groups[0].Status != wire.StatusOK {
		t.Fatalf("symbols: %s", describe(groups))
	}
	syms, err := op.Symbols.DecodeAnswer(groups[0].Body)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(syms.Functions, "main") || !slices.Contains(syms.Functions, "pass") || !slices.Contains(syms.Files, "ring.c") {
		t.Errorf("symbols: %+v", syms)
	}
}

// Displays live in the front end: after restart, which starts new gdbs,
// they still show at every stop.
func TestDisplaysSurviveRestart(t *testing.T) {
	testenv.RequireTool(t, "gdb")
	bin := testenv.Examples(t)
	out, stderr, code := run(t, "", "debug", "-n", "2", "--rm", "local", "--timeout", "60s",
		"-e", "break compute", "-e", "run", "-e", "wait", "-e", "display rank * 10", "-e", "restart", "-e", "wait",
		"-e", "info display", "--", filepath.Join(bin, "plain"))
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, stderr)
	}
	// When made, and at the stop after the restart.
	if n := strings.Count(out, "[0] 1: rank * 10 = 0\n"); n != 2 {
		t.Errorf("display shown %d times for rank 0, want 2:\n%s", n, out)
	}
	wantAll(t, out, "restarted: 2 ranks under the local launcher", "1: rank * 10  [0-1]\n")
}
