package integration

import (
	"bufio"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/sdm-hpc/sdm/internal/debugregs"
	"github.com/sdm-hpc/sdm/testkit/testenv"
)

// lineOf is the number of the first line of the example source file that
// holds mark.
func lineOf(t *testing.T, file, mark string) int {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "examples", file))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		if strings.Contains(sc.Text(), mark) {
			return n
		}
	}
	t.Fatalf("examples/%s has no line with %q", file, mark)
	return 0
}

// hasLines checks that out holds each of lines as whole lines, in order
// among themselves, each exactly once.
func hasLines(t *testing.T, out string, lines ...string) {
	t.Helper()
	for _, want := range lines {
		if n := countLines(out, want); n != 1 {
			t.Errorf("%d lines %q, want 1", n, want)
		}
	}
	if t.Failed() {
		t.Logf("output:\n%s", out)
	}
}

// countLines is how many lines of out are line.
func countLines(out, line string) int {
	n := 0
	for _, l := range strings.Split(out, "\n") {
		if l == line {
			n++
		}
	}
	return n
}

// A C++ MPI program as a gdb user sees it: a method returning a reference
// prints the value it refers to, merged by value; aggregates print
// whole; locals and arguments merge one variable at a time; a watchpoint
// stop shows the old and new values and a finish the value returned,
// both merged; commands to ranks whose process exited say so once.
func TestCxxValues(t *testing.T) {
	testenv.RequireTool(t, "gdb")
	testenv.RequireTool(t, "mpirun.openmpi")
	bin := testenv.Examples(t)
	set := lineOf(t, "values/values.cpp", "the locals are set here")
	// A method's value is a call in the program (gdb's).
	call, cycle := "print domain.cycle()", "[0-3] domain.cycle() = 20"
	if !testenv.InferiorCalls(t) {
		call, cycle = "print domain.m_cycle", "[0-3] domain.m_cycle = 20"
	}
	// Where the debug registers do not trap, gdb's software watchpoint
	// tells the change in whichever thread it was stepping (Open MPI's
	// progress thread): the ranks step over the line instead.
	watch, watched := []string{"-e", "watch steps", "-e", "continue"}, debugregs.Work()
	deletes := "delete 1 2"
	if !watched {
		watch, deletes = []string{"-e", "next"}, "delete 1"
	}
	args := []string{"debug", "-n", "4", "--timeout", "90s", "--launcher-arg=--oversubscribe",
		"-e", "break values.cpp:" + strconv.Itoa(set), "-e", "run", "-e", "wait",
		"-e", call, "-e", "print origin", "-e", "print cells", "-e", "locals", "-e", "args", "-e", "bt full"}
	args = append(append(args, watch...), "-e", "wait", "-e", "finish",
		"-e", deletes, "-e", "continue", "-e", "wait", "-e", "where", "-e", "[3] locals",
		"--", filepath.Join(bin, "values"))
	out, stderr, code := run(t, "", args...)
	if code != 1 {
		t.Errorf("exit %d, want 1 for the commands to ranks that exited: %s", code, stderr)
	}
	at := func(line int) string { return " at examples/values/values.cpp:" + strconv.Itoa(line) }
	hasLines(t, out,
		"[0-3] stopped in advance"+at(set)+" (breakpoint 1)",
		cycle,
		"[0-3] n = 100", "[0-1] half = 4", "[2-3] half = 5", "[0-3] corners = {0, 1, 2, 3}",
		"[0-3] moved = {x = 2, y = 2.5}",
		"[0-3] domain = {m_cycle = 20}", "[0] rank = 0", "[3] rank = 3", "[0-3] size = 4",
		"      Value returned is 42",
	)
	if watched {
		hasLines(t, out, "[0-1] stopped in advance"+at(set+1)+" (watchpoint 2)", "[2-3] stopped in advance"+at(set+1)+" (watchpoint 2)")
	}
	// print, then locals or args.
	for _, line := range []string{"[0-3] origin = {x = 1, y = 2.5}", "[0-3] cells = std::vector of length 3, capacity 3 = {100, 100, 100}"} {
		if n := countLines(out, line); n != 2 {
			t.Errorf("%d lines %q, want 2 (print, then locals or args)", n, line)
		}
	}
	res := []string{
		`\n\[0-1\] stopped in advance at \S+ \(watchpoint 2\)\n      Old value = 0\n      New value = 4\n`,
		`\n\[2-3\] stopped in advance at \S+ \(watchpoint 2\)\n      Old value = 0\n      New value = 5\n`,
	}
	if !watched {
		res = nil
	}
	for _, re := range append(res,
		`\n\[0-3\] stopped in main at examples/values/values\.cpp:\d+ \(function-finished\)\n      Value returned is 42\n`,
		// bt full: the arguments and each frame's locals, aggregates whole.
		`\n\[0-3\] #0  advance \(domain=\.\.\., origin=\.\.\., rank=<4 values>, size=4\) at \S+\n {14}n = 100\n`,
		`\n {14}corners = \{0, 1, 2, 3\}\n`,
		// where and [3] locals after the exit: what became of the ranks.
		`\n\[0-3\] exited with code 0\n\[0-3\] exited with code 0\n\[3\] exited with code 0\n`,
	) {
		if !regexp.MustCompile(re).MatchString(out) {
			t.Errorf("output lacks %q:\n%s", re, out)
		}
	}
	for _, never := range []string{"@0x", "{...}", "No registers", "No stack", "No frame"} {
		if strings.Contains(out, never) {
			t.Errorf("output holds %q:\n%s", never, out)
		}
	}
}

// Identical stops that arrive at different times are one line when the
// wait returns; ranks whose process is gone say so, once per command, in
// one line for them all.
func TestStopsMergeAndGoneRanks(t *testing.T) {
	testenv.RequireTool(t, "gdb")
	bin := testenv.Examples(t)
	out, stderr, code := run(t, "", "debug", "-n", "8", "-e", "break compute", "-e", "run", "-e", "wait",
		"-e", "continue", "-e", "wait", "-e", "where", "-e", "print value", "-e", "[7] continue",
		"--", filepath.Join(bin, "plain"))
	if code != 1 {
		t.Errorf("exit %d, want 1 for the commands to ranks that exited: %s", code, stderr)
	}
	hasLines(t, out,
		"[0-6] stopped in compute at examples/plain/plain.c:15 (breakpoint 1)",
		"[0-6] exited with code 0",
	)
	// The exit itself, continue, which went to 0-6 only, and [7] continue.
	if n := countLines(out, "[7] exited with code 0"); n != 3 {
		t.Errorf("%d lines say rank 7 exited, want 3 (its exit, continue and [7] continue):\n%s", n, out)
	}
	if n := countLines(out, "[0-7] exited with code 0"); n != 2 {
		t.Errorf("%d lines say ranks 0-7 exited, want 2 (where and print):\n%s", n, out)
	}
	if !strings.HasSuffix(out, "\n[7] exited with code 0\n") {
		t.Errorf("continue to rank 7, which exited, does not say so last:\n%s", out)
	}
	for _, never := range []string{"No registers", "No stack", "not being run", "No symbol"} {
		if strings.Contains(out, never) {
			t.Errorf("output holds gdb's %q:\n%s", never, out)
		}
	}
}

// A program without debugging symbols is reported once at its start, a
// breakpoint on a file of it says why it cannot be, and one on a file
// no program has is an error too; functions still work.
func TestNoDebuggingSymbols(t *testing.T) {
	testenv.RequireTool(t, "gdb")
	bin := testenv.Examples(t)
	prog := filepath.Join(bin, "plain-nodebug")
	out, stderr, code := run(t, "", "debug", "-n", "4", "-e", "break plain.c:15", "-e", "break compute",
		"-e", "run", "-e", "wait", "-e", "kill", "--", prog)
	if code != 1 {
		t.Errorf("exit %d, want 1 for the breakpoint refused: %s", code, stderr)
	}
	hasLines(t, out,
		"[0-3] warning: no debugging symbols in "+prog+": lines, variables and FILE:LINE breakpoints need it built with -g",
		"[0-3] error: no source file named plain.c: "+prog+" has no debugging symbols (build it with -g)",
		"[0-2] stopped in compute (breakpoint 1)",
	)
	plain, _, _ := run(t, "", "debug", "-n", "2", "-e", "break nosuch.c:27", "-e", "breakpoints", "--", filepath.Join(bin, "plain"))
	hasLines(t, plain, "[0-1] error: no source file named nosuch.c in "+filepath.Join(bin, "plain")+
		" or its libraries read so far, nor on disk beside its sources: check the name", "[0-1] no breakpoints")
}
