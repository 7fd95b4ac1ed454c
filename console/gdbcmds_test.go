package console

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sdm-hpc/sdm/op"
	"github.com/sdm-hpc/sdm/wire"
)

// Names resolve as gdb's do: whole names and aliases, unique prefixes, a
// name that is a prefix of the others', ambiguity named, a typo's nearest
// name suggested.
func TestCommandNamesResolveAsGDBs(t *testing.T) {
	for word, want := range map[string]string{
		"p": "print", "c": "continue", "n": "next", "s": "step", "b": "break", "fin": "finish", "bt": "where",
		"i": "info", "cont": "continue", "disp": "display", "wat": "watch", "th": "thread", "undisp": "undisplay",
		"l": "list", "h": "help", "backt": "where",
	} {
		cmd, err := lookup(word)
		if err != nil || cmd.name != want {
			t.Errorf("%q: %v %v, want %s", word, cmd, err, want)
		}
	}
	for word, want := range map[string]string{
		"con":      `ambiguous command "con": condition, continue`,
		"contnue":  `unknown command "contnue": did you mean "continue"?`,
		"contiune": `did you mean "continue"?`,
		"whre":     `did you mean "where"?`,
		"prnt":     `did you mean "print"?`,
		"xyzzy":    `unknown command "xyzzy" (try help)`,
	} {
		_, err := lookup(word)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", word, err, want)
		}
	}
}

// Every command and every alias is in help's list.
func TestHelpListsEveryCommandAndAlias(t *testing.T) {
	out, err := execLines(t, newFakeTree(1, atBreakpoint), Options{}, "help")
	if err != nil {
		t.Fatal(err)
	}
	for _, cmd := range commands {
		if !strings.Contains(out, "\n  "+cmd.usage+" ") {
			t.Errorf("help lacks %q", cmd.usage)
		}
		for _, a := range cmd.aliases {
			if !strings.Contains(out, " "+a+",") && !strings.Contains(out, " "+a+")") {
				t.Errorf("help lacks %s's alias %s", cmd.name, a)
			}
		}
	}
}

// info alone lists its subcommands and sends nothing; info SUB sends the
// op of SUB, a prefix included.
func TestInfoSubcommandsSendTheirOps(t *testing.T) {
	f := newFakeTree(2, atBreakpoint)
	out, err := execLines(t, f, Options{}, "info")
	if err != nil || len(f.sent()) != 0 || !strings.Contains(out, "info registers, r ") {
		t.Fatalf("info: %v, sent %v:\n%s", err, f.sent(), out)
	}
	for line, want := range map[string]string{
		"info locals": wire.OpLocals, "info args": wire.OpArgs, "i b": wire.OpBreakList, "info br": wire.OpBreakList,
		"info threads": wire.OpThreads, "info frame": wire.OpFrameInfo, "info reg": wire.OpRegisters,
		"info sharedlibrary": wire.OpLibraries, "info sig": wire.OpSignals, "info stack": wire.OpBacktrace,
	} {
		f := newFakeTree(2, atBreakpoint)
		if _, err := execLines(t, f, Options{}, line); err != nil {
			t.Errorf("%s: %v", line, err)
			continue
		}
		if sent := f.sent(); len(sent) != 1 || sent[0].op != want {
			t.Errorf("%s sent %v, want %s", line, sent, want)
		}
	}
	if _, err := execLines(t, newFakeTree(1, atBreakpoint), Options{}, "info nosuch"); err == nil ||
		!strings.Contains(err.Error(), `unknown info subcommand "nosuch"`) {
		t.Errorf("info nosuch: %v", err)
	}
}

// trace is a backtrace of two frames with an argument.
func trace(rank string) []byte {
	return wire.MustEncode(wire.Trace{Levels: []wire.Level{
		{Level: 0, Frame: wire.Frame{Func: "compute", File: "plain.c", Line: 15},
			Args: []wire.Var{{Name: "rank", Type: "int", Value: rank}, {Name: "size", Type: "int", Value: "4"}}},
		{Level: 1, Frame: wire.Frame{Func: "main", File: "plain.c", Line: 42}, Args: []wire.Var{}},
	}})
}

// Ranks whose stacks differ only in values print one backtrace, with
// the values they do not share counted; other stacks stay apart.
func TestBacktraceMergesByStack(t *testing.T) {
	f := newFakeTree(5, atBreakpoint)
	f.answer = func(context.Context, wire.RankSet, string) ([]wire.Group, error) {
		return []wire.Group{
			{Ranks: wire.Single(0), Body: trace("0")},
			{Ranks: wire.Single(1), Body: trace("1")},
			{Ranks: wire.Single(2), Body: trace("2")},
			{Ranks: wire.Single(3), Body: wire.MustEncode(wire.Trace{Levels: []wire.Level{
				{Level: 0, Frame: wire.Frame{Func: "PMPI_Recv", From: "libmpi.so.40"}}}, More: true})},
			{Ranks: wire.Single(4), Status: wire.StatusError, Body: []byte("No stack.")},
		}, nil
	}
	out, err := execLines(t, f, Options{}, "bt")
	if err != nil {
		t.Fatal(err)
	}
	want := "[0-2] #0  compute (rank=<3 values>, size=4) at plain.c:15\n      #1  main () at plain.c:42\n" +
		"[3] #0  PMPI_Recv () from libmpi.so.40\n    (More stack frames follow...)\n[4] error: No stack.\n"
	if out != want {
		t.Errorf("printed\n%s\nwant\n%s", out, want)
	}
	var bt wire.Backtrace
	for line, want := range map[string]wire.Backtrace{"bt": {}, "bt 3": {Limit: 3}, "where -2": {Limit: -2},
		"bt full": {Full: true}, "backtrace full 1": {Limit: 1, Full: true}} {
		f.mu.Lock()
		f.calls = nil
		f.mu.Unlock()
		if _, err := execLines(t, f, Options{}, line); err != nil {
			t.Fatal(err)
		}
		// Rank 4's failure is followed by a status, to tell a gone process.
		if sent := f.sent(); len(sent) != 2 || wire.Decode(sent[0].body, &bt) != nil || bt != want || sent[1].op != wire.OpStatus {
			t.Errorf("%s sent %v, want %+v", line, sent, want)
		}
	}
	if _, err := execLines(t, f, Options{}, "bt foo"); err == nil {
		t.Error("bt foo: no usage error")
	}
}

// up and down send signed counts; frame alone shows the selected frame.
func TestUpDownFrame(t *testing.T) {
	f := newFakeTree(2, atBreakpoint)
	f.answer = func(context.Context, wire.RankSet, string) ([]wire.Group, error) {
		return []wire.Group{{Ranks: wire.All(2), Body: wire.MustEncode(wire.Level{Level: 1,
			Frame: wire.Frame{Func: "main", File: "plain.c", Line: 42}, Source: "  x = compute();"})}}, nil
	}
	out, err := execLines(t, f, Options{}, "up", "up 3", "down", "down 2", "frame")
	if err != nil {
		t.Fatal(err)
	}
	var got []int
	for _, s := range f.sent() {
		n, _ := op.Up.DecodeBody(s.body)
		got = append(got, n.N)
	}
	if !slices.Equal(got, []int{1, 3, -1, -2, 0}) {
		t.Errorf("counts sent %v", got)
	}
	if !strings.HasPrefix(out, "[0-1] #1  main at plain.c:42\n      42\t  x = compute();\n") {
		t.Errorf("printed\n%s", out)
	}
	if _, err := execLines(t, f, Options{}, "up x"); err == nil {
		t.Error("up x: no usage error")
	}
	// frame N selects frame N, then shows it as frame alone does.
	f.calls = nil
	out, err = execLines(t, f, Options{}, "frame 1")
	if sent := f.sent(); err != nil || len(sent) != 2 || sent[0].op != wire.OpFrame || sent[1].op != wire.OpUp ||
		!strings.HasPrefix(out, "[0-1] #1  main at plain.c:42\n") {
		t.Errorf("frame 1: sent %v, printed %q, %v", sent, out, err)
	}
	if _, err := execLines(t, f, Options{}, "frame -1"); err == nil {
		t.Error("frame -1: no usage error")
	}
}

// delete alone deletes all: at the terminal after yes, never after no,
// and in a script without asking.
func TestDeleteAllAsksAtTheTerminal(t *testing.T) {
	for _, c := range []struct {
		ask   func(string) bool
		sends bool
	}{{nil, true}, {func(string) bool { return true }, true}, {func(string) bool { return false }, false}} {
		f := newFakeTree(2, atBreakpoint)
		con := New(f, &strings.Builder{}, Options{})
		var asked []string
		if c.ask != nil {
			con.ask = func(q string) bool { asked = append(asked, q); return c.ask(q) }
		}
		if err := con.Exec(context.Background(), "delete"); err != nil {
			t.Fatal(err)
		}
		sent := f.sent()
		if c.sends != (len(sent) == 1) || c.sends && (sent[0].op != wire.OpDelete || len(sent[0].body) != 0 && string(sent[0].body) != string(op.Delete.Body(wire.IDs{}))) {
			t.Errorf("ask %v: sent %v", c.ask != nil, sent)
		}
		if c.ask != nil && (len(asked) != 1 || !strings.Contains(asked[0], "Delete all breakpoints of [0-1]?")) {
			t.Errorf("asked %q", asked)
		}
	}
}

// Displays show at every stop of their ranks, in one command however
// many there are, merged by value; a display out of its function is not
// shown at a stop; undisplay ends them.
// displayTree is a job of 4 running ranks whose x is 0 on even ranks, 1
// on odd ones, and that know no y.
func displayTree() *fakeTree {
	f := newFakeTree(4, runningState)
	f.answer = func(_ context.Context, ranks wire.RankSet, o string) ([]wire.Group, error) {
		if o != wire.OpEvaluate {
			return f.stateGroups(ranks), nil
		}
		sent := f.sent()
		exprs, _ := op.Evaluate.DecodeBody(sent[len(sent)-1].body)
		var groups []wire.Group
		ranks.Each(func(r int) bool {
			var v []wire.Value
			for _, e := range exprs.Exprs {
				if e == "x" {
					v = append(v, wire.Value{Value: []string{"0", "1"}[r%2]})
				} else {
					v = append(v, wire.Value{Error: `No symbol "y" in current context.`, Absent: true})
				}
			}
			groups = append(groups, wire.Group{Ranks: wire.Single(r), Body: wire.MustEncode(v)})
			return true
		})
		return groups, nil
	}
	return f
}

func TestDisplaysAtEveryStop(t *testing.T) {
	f := displayTree()
	c, out := fakeConsole(t, f, Options{Window: time.Millisecond})
	for _, line := range []string{"[0-2] display x", "display y", "info display"} {
		if err := c.Exec(context.Background(), line); err != nil {
			t.Fatal(err)
		}
	}
	f.mu.Lock()
	f.calls = nil
	f.mu.Unlock()
	f.set(wire.Range(0, 3), atBreakpoint, wire.EventStopped)
	deadline := time.Now().Add(10 * time.Second)
	for strings.Count(out.String(), "[1] 1: x = 1\n") < 2 && time.Now().Before(deadline) {
		c.Sync(context.Background())
	}
	text := out.String()
	for _, want := range []string{"1: x [0-2]", "2: y  [0-3]", "[0,2] 1: x = 0\n[1] 1: x = 1\n"} {
		if !strings.Contains(text, strings.ReplaceAll(want, "x [", "x  [")) {
			t.Errorf("output lacks %q:\n%s", want, text)
		}
	}
	if strings.Count(text, `2: y: No symbol`) != 1 {
		t.Errorf("display y shown at the stop, or not when made:\n%s", text)
	}
	if sent := f.sent(); len(sent) != 1 || sent[0].op != wire.OpEvaluate || !sent[0].ranks.Equal(wire.Range(0, 3)) {
		t.Errorf("at the stop sent %v, want one evaluate to 0-3", sent)
	}
	if err := c.Exec(context.Background(), "undisplay 1 2"); err != nil {
		t.Fatal(err)
	}
	if err := c.Exec(context.Background(), "undisplay 1"); err == nil {
		t.Error("undisplay of a display gone: no error")
	}
}

// Under --json the displays shown at a stop are notes of the schema,
// one per display and value, like every other line.
func TestDisplaysAtAStopInJSON(t *testing.T) {
	f := displayTree()
	c, out := fakeConsole(t, f, Options{Window: time.Millisecond, JSON: true})
	if err := c.Exec(context.Background(), "[0-2] display x"); err != nil {
		t.Fatal(err)
	}
	f.set(wire.Range(0, 3), atBreakpoint, wire.EventStopped)
	var notes []map[string]any
	deadline := time.Now().Add(10 * time.Second)
	for len(notes) < 2 && time.Now().Before(deadline) {
		c.Sync(context.Background())
		notes = notes[:0]
		for _, obj := range jsonLines(t, out.String()) {
			if obj["type"] == "note" && obj["op"] == "display" {
				notes = append(notes, obj)
			}
		}
	}
	if len(notes) != 2 || notes[0]["ranks"] != "0,2" || notes[0]["value"] != "0" ||
		notes[1]["ranks"] != "1" || notes[1]["value"] != "1" || notes[0]["expr"] != "x" {
		t.Fatalf("display notes at the stop: %v\n%s", notes, out.String())
	}
}

// focus alone prints a command that sets the focus again; the bracketed
// form is taken too.
func TestFocusRoundTrips(t *testing.T) {
	f := newFakeTree(8, atBreakpoint)
	out, err := execLines(t, f, Options{}, "focus 1-3,6", "focus", "focus [2,4]", "focus")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "\nfocus 1-3,6\n") || !strings.HasSuffix(out, "\nfocus 2,4\n") {
		t.Errorf("printed\n%s", out)
	}
}

// News that arrives while the terminal waits for a line is printed on a
// line of its own, and the prompt shown again after it.
func TestNewsRedrawsThePrompt(t *testing.T) {
	f := newFakeTree(4, runningState)
	c, out := fakeConsole(t, f, Options{Window: time.Millisecond})
	c.prompting("(sdm) ")
	f.set(wire.Range(0, 3), atBreakpoint, wire.EventStopped)
	c.Sync(context.Background())
	want := "\r\033[K[0-3] stopped in pass at ring.c:10 (breakpoint 1)\n(sdm) "
	if out.String() != want {
		t.Errorf("printed %q, want %q", out.String(), want)
	}
	c.prompting("")
	f.set(wire.Range(0, 3), runningState, wire.EventRunning)
	f.set(wire.Range(0, 3), atBreakpoint, wire.EventStopped)
	c.Sync(context.Background())
	if strings.Count(out.String(), "(sdm) ") != 1 {
		t.Errorf("a prompt shown while a command runs: %q", out.String())
	}
}

// Tab after break or list offers the program's functions and files,
// asked of one rank once.
func TestCompleteLocations(t *testing.T) {
	f := newFakeTree(4, atBreakpoint)
	f.answer = func(_ context.Context, ranks wire.RankSet, o string) ([]wire.Group, error) {
		return []wire.Group{{Ranks: ranks, Body: wire.MustEncode(wire.Symbols{
			Functions: []string{"compute", "main", "special"}, Files: []string{"compat.c", "plain.c"}})}}, nil
	}
	c := New(f, &strings.Builder{}, Options{Focus: wire.Range(2, 3)})
	if got := c.Complete("b com"); !slices.Equal(got, []string{"b compute", "b compat.c:"}) {
		t.Errorf("b com: %q", got)
	}
	if got := c.Complete("[1] list p"); !slices.Equal(got, []string{"[1] list plain.c:"}) {
		t.Errorf("list p: %q", got)
	}
	if got := c.Complete("print com"); got != nil {
		t.Errorf("print com: %q", got)
	}
	if sent := f.sent(); len(sent) != 1 || sent[0].op != wire.OpSymbols || !sent[0].ranks.Equal(wire.Single(2)) {
		t.Errorf("sent %v, want one symbols to rank 2", sent)
	}
}
