package gdbmi_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sdm-hpc/sdm/backend"
	"github.com/sdm-hpc/sdm/backend/gdbmi"
	"github.com/sdm-hpc/sdm/internal/debugregs"
	"github.com/sdm-hpc/sdm/testkit/testenv"
	"github.com/sdm-hpc/sdm/wire"
)

// rank drives one backend the way a node would, for tests.
type rank struct {
	t      testing.TB
	b      *gdbmi.Backend
	output strings.Builder
	shared bool // on a gdb it shares with other ranks
}

func newRank(t testing.TB, r, size int, path string) *rank {
	t.Helper()
	testenv.RequireTool(t, "gdb")
	rk := &rank{t: t, b: newBackend(backend.Config{Rank: r, Size: size, Path: path}), shared: sharedPool != nil && path == ""}
	t.Cleanup(func() { rk.b.Close() })
	return rk
}

// do runs op and returns its answer.
func (r *rank) do(op string, body any) ([]byte, error) {
	r.t.Helper()
	var raw []byte
	if body != nil {
		raw = wire.MustEncode(body)
	}
	type answer struct {
		body []byte
		err  error
	}
	ch := make(chan answer, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	r.b.Do(ctx, op, raw, func(b []byte, err error) { ch <- answer{b, err} })
	select {
	case a := <-ch:
		return a.body, a.err
	case <-time.After(25 * time.Second):
		r.t.Fatalf("%s: no answer within 25s", op)
		return nil, nil
	}
}

// must runs op, fails the test on an error, and decodes the answer into v.
func (r *rank) must(op string, body any, v any) {
	r.t.Helper()
	answer, err := r.do(op, body)
	if err != nil {
		r.t.Fatalf("%s: %v", op, err)
	}
	if v != nil {
		if err := wire.Decode(answer, v); err != nil {
			r.t.Fatalf("%s: %v", op, err)
		}
	}
}

// event waits for the next event called op, collecting output on the way
// and answering the loads reported on the way as the front end does.
func (r *rank) event(op string) wire.State {
	r.t.Helper()
	_, st := r.next(20*time.Second, op)
	return st
}

// next waits, for at most d, for the next event called one of ops, and
// says which it was.
func (r *rank) next(d time.Duration, ops ...string) (string, wire.State) {
	r.t.Helper()
	deadline := time.After(d)
	for {
		select {
		case ev, ok := <-r.b.Events():
			if !ok {
				r.t.Fatalf("events closed while waiting for %s", strings.Join(ops, " or "))
			}
			switch ev.Op {
			case wire.EventOutput:
				var o wire.Output
				wire.Decode(ev.Body, &o)
				r.output.WriteString(o.Text)
			case wire.EventLoaded:
				if !slices.Contains(ops, wire.EventLoaded) {
					r.must(wire.OpPlant, nil, nil)
				}
			}
			if !slices.Contains(ops, ev.Op) {
				continue
			}
			var st wire.State
			if ev.Op == wire.EventError || ev.Op == wire.EventWarning {
				st.Reason = string(ev.Body)
			} else if len(ev.Body) > 0 {
				wire.Decode(ev.Body, &st)
			}
			return ev.Op, st
		case <-deadline:
			r.t.Fatalf("no %s event within %v", strings.Join(ops, " or "), d)
		}
	}
}

func (r *rank) print(expr string) string {
	r.t.Helper()
	var v wire.Text
	r.must(wire.OpPrint, wire.Expr{Expr: expr}, &v)
	return v.Text
}

func (r *rank) start(program string, args ...string) {
	r.t.Helper()
	var st wire.State
	r.must(wire.OpStart, wire.Start{Program: program, Args: args}, &st)
	if st.State != wire.StateNotStarted {
		r.t.Fatalf("after start: %+v", st)
	}
}

func TestBreakpointsAndInspection(t *testing.T) {
	bin := testenv.Examples(t)
	r := newRank(t, 2, 4, "")
	r.start(filepath.Join(bin, "plain"))

	var bp wire.Breakpoint
	r.must(wire.OpBreak, wire.Break{Location: "compute"}, &bp)
	if bp.Number != 1 || bp.Func != "compute" || !strings.HasSuffix(bp.Location, "plain.c:15") || bp.Pending {
		t.Fatalf("break compute: %+v", bp)
	}
	r.must(wire.OpRun, nil, nil)
	if st := r.event(wire.EventStopped); st.Reason != "breakpoint-hit" || st.Breakpoint != 1 || st.Frame.Func != "compute" || st.Frame.Line != 15 {
		t.Fatalf("stop: %+v", st)
	}

	var stack wire.Stack
	r.must(wire.OpWhere, nil, &stack)
	if len(stack.Frames) != 2 || stack.Frames[0].Func != "compute" || stack.Frames[1].Func != "main" {
		t.Fatalf("where: %+v", stack)
	}
	if got := r.print("rank * 10 + size"); got != "24" {
		t.Fatalf("print: %q", got)
	}
	var ptype wire.Text
	r.must(wire.OpPtype, wire.Expr{Expr: "rank"}, &ptype)
	if ptype.Text != "type = int" {
		t.Fatalf("ptype: %q", ptype.Text)
	}
	var args, locals, globals []wire.Var
	r.must(wire.OpArgs, nil, &args)
	if len(args) != 2 || args[0].Name != "rank" || args[0].Value != "2" || args[1].Value != "4" {
		t.Fatalf("args: %+v", args)
	}
	r.must(wire.OpLocals, nil, &locals)
	if len(locals) != 1 || locals[0].Name != "value" || locals[0].Type != "int" {
		t.Fatalf("locals: %+v", locals)
	}
	r.must(wire.OpGlobals, nil, &globals)
	names := fmt.Sprint(globals)
	if !strings.Contains(names, "counter") || !strings.Contains(names, "greeting") {
		t.Fatalf("globals: %+v", globals)
	}
	var depth wire.Count
	r.must(wire.OpDepth, nil, &depth)
	var fr wire.Frame
	r.must(wire.OpFrame, wire.Count{N: 1}, &fr)
	if depth.N != 2 || fr.Func != "main" {
		t.Fatalf("depth %d, frame 1 %+v", depth.N, fr)
	}
	r.must(wire.OpFrame, wire.Count{N: 0}, &fr)
	var threads []wire.Thread
	r.must(wire.OpThreads, nil, &threads)
	if len(threads) != 1 || !threads[0].Current || threads[0].Frame.Func != "compute" {
		t.Fatalf("threads: %+v", threads)
	}
	var th wire.Thread
	r.must(wire.OpThread, wire.Count{N: 1}, &th)

	// Memory: rank is 2; write 7 over it and read it back.
	var mem wire.Memory
	r.must(wire.OpMemRead, wire.Memory{Addr: "&rank", Count: 4}, &mem)
	if mem.Hex != "02000000" || !strings.HasPrefix(mem.Addr, "0x") {
		t.Fatalf("x &rank 4: %+v", mem)
	}
	r.must(wire.OpMemSet, wire.Memory{Addr: "&rank", Hex: "07000000"}, nil)
	if got := r.print("rank"); got != "7" {
		t.Fatalf("rank after poke: %q", got)
	}
	if _, err := r.do(wire.OpMemSet, wire.Memory{Addr: "&rank", Hex: "xyz"}); err == nil {
		t.Fatal("poke accepted bad hex")
	}

	// Stepping: next goes to line 16, step stays in compute, finish returns to main.
	r.must(wire.OpNext, wire.Count{N: 1}, nil)
	if st := r.event(wire.EventStopped); st.Reason != "end-stepping-range" || st.Frame.Line != 16 {
		t.Fatalf("next: %+v", st)
	}
	r.must(wire.OpStep, wire.Count{N: 1}, nil)
	if st := r.event(wire.EventStopped); st.Frame.Line != 17 {
		t.Fatalf("step: %+v", st)
	}
	r.must(wire.OpFinish, nil, nil)
	if st := r.event(wire.EventStopped); st.Reason != "function-finished" || st.Frame.Func != "main" {
		t.Fatalf("finish: %+v", st)
	}

	// Signals, and commands passed straight to gdb.
	var text wire.Text
	r.must(wire.OpSignals, nil, &text)
	if !strings.Contains(text.Text, "SIGINT") {
		t.Fatalf("signals: %q", text.Text)
	}
	r.must(wire.OpHandle, wire.Text{Text: "SIGUSR1 nostop noprint"}, &text)
	if !strings.Contains(text.Text, "SIGUSR1") || !strings.Contains(text.Text, "No") {
		t.Fatalf("handle: %q", text.Text)
	}
	r.must(wire.OpRaw, wire.Text{Text: "info line compute"}, &text)
	if !strings.Contains(text.Text, "plain.c") {
		t.Fatalf("gdb info line: %q", text.Text)
	}
	r.must(wire.OpRaw, wire.Text{Text: "-stack-info-depth"}, &text)
	if text.Text != `done,depth="1"` {
		t.Fatalf("gdb -stack-info-depth: %q", text.Text)
	}
	if _, err := r.do(wire.OpPrint, wire.Expr{Expr: "nosuch"}); err == nil || !strings.Contains(err.Error(), "nosuch") {
		t.Fatalf("print of an unknown symbol: %v", err)
	}

	// The program runs to its end: its output, then its exit.
	r.must(wire.OpCont, nil, nil)
	if st := r.event(wire.EventExited); st.Code != 0 {
		t.Fatalf("exit: %+v", st)
	}
	// main's rank was not poked, but compute's was: 7 % 2 * 10 + 4.
	if !strings.Contains(r.output.String(), "hello from rank 2 of 4: 14") {
		t.Fatalf("output %q lacks the program's line", r.output.String())
	}
}

func TestBreakpointVariants(t *testing.T) {
	bin := testenv.Examples(t)
	r := newRank(t, 5, 8, "")
	r.start(filepath.Join(bin, "plain"))
	var bp wire.Breakpoint
	r.must(wire.OpBreak, wire.Break{Location: "plain.c:16", Condition: "rank == 5", Temporary: true}, &bp)
	if !bp.Temporary || bp.Condition != "rank == 5" {
		t.Fatalf("tbreak with a condition: %+v", bp)
	}
	r.must(wire.OpBreak, wire.Break{Location: "compute"}, &bp)
	r.must(wire.OpIgnore, wire.Ignore{ID: 2, Count: 1}, nil)
	r.must(wire.OpDisable, wire.IDs{IDs: []int{2}}, nil)
	var list []wire.Breakpoint
	r.must(wire.OpBreakList, nil, &list)
	if len(list) != 2 || list[1].Enabled || list[1].Ignore != 1 {
		t.Fatalf("breakpoints: %+v", list)
	}
	r.must(wire.OpEnable, wire.IDs{IDs: []int{2}}, nil)
	r.must(wire.OpDelete, wire.IDs{IDs: []int{2}}, nil)
	r.must(wire.OpCondition, wire.Condition{ID: 1, Expr: "rank == 5"}, nil)
	refused := r.watchRefused("counter")
	if !refused {
		var w wire.Breakpoint
		r.must(wire.OpWatch, wire.Watch{Expr: "counter", Mode: "write"}, &w)
		if w.Type != "write watchpoint" || w.Location != "counter" {
			t.Fatalf("watch: %+v", w)
		}
	}
	r.must(wire.OpRun, nil, nil)
	if st := r.event(wire.EventStopped); st.Breakpoint != 1 || st.Frame.Line != 16 {
		t.Fatalf("conditional temporary breakpoint: %+v", st)
	}
	if !refused {
		r.must(wire.OpCont, nil, nil)
		if st := r.event(wire.EventStopped); st.Reason != "watchpoint-trigger" {
			t.Fatalf("watchpoint: %+v", st)
		}
		if got := r.print("counter"); got != "1" {
			t.Fatalf("counter after the write: %q", got)
		}
	}
	if _, err := r.do(wire.OpWatch, wire.Watch{Expr: "counter", Mode: "sideways"}); err == nil {
		t.Fatal("a watch mode that does not exist was accepted")
	}
	if !debugregs.Work() && !r.shared {
		if _, err := r.do(wire.OpWatch, wire.Watch{Expr: "counter", Mode: "read"}); err == nil || !strings.Contains(err.Error(), "debug registers") {
			t.Errorf("rwatch where the debug registers do not trap: %v, want a refusal that says why", err)
		}
	}
	r.must(wire.OpKill, nil, nil)
	if st := r.event(wire.EventExited); st.Reason != "killed" {
		t.Fatalf("kill: %+v", st)
	}
}

// break-next numbers the next breakpoint as asked, leaving no placeholder
// behind, and refuses a number already used; a breakpoint keeps the
// location it was asked for.
func TestBreakNext(t *testing.T) {
	bin := testenv.Examples(t)
	r := newRank(t, 0, 1, "")
	r.start(filepath.Join(bin, "plain"))
	r.must(wire.OpBreakNext, wire.Count{N: 1}, nil) // nothing to use up
	r.must(wire.OpBreakNext, wire.Count{N: 4}, nil)
	var bp wire.Breakpoint
	r.must(wire.OpBreak, wire.Break{Location: "compute"}, &bp)
	if bp.Number != 4 || bp.Original != "compute" || !strings.HasSuffix(bp.Location, "plain.c:15") {
		t.Fatalf("break after break-next 4: %+v", bp)
	}
	var list []wire.Breakpoint
	r.must(wire.OpBreakList, nil, &list)
	if len(list) != 1 || list[0].Number != 4 {
		t.Fatalf("placeholders left behind: %+v", list)
	}
	if _, err := r.do(wire.OpBreakNext, wire.Count{N: 3}); err == nil || !strings.Contains(err.Error(), "used up to 4") {
		t.Fatalf("break-next below the next number: %v", err)
	}
	r.must(wire.OpRun, nil, nil)
	if st := r.event(wire.EventStopped); st.Breakpoint != 4 || st.Frame.Func != "compute" {
		t.Fatalf("stop at the renumbered breakpoint: %+v", st)
	}
}

// A breakpoint in a library that is loaded later is pending until dlopen
// loads it, then hit.
func TestPendingBreakpoint(t *testing.T) {
	bin := testenv.Examples(t)
	r := newRank(t, 0, 1, "")
	r.start(filepath.Join(bin, "dlopen"))
	var bp wire.Breakpoint
	r.must(wire.OpBreak, wire.Break{Location: "plugin_function"}, &bp)
	if !bp.Pending || bp.Location != "plugin_function" {
		t.Fatalf("break before the library is loaded: %+v", bp)
	}
	r.must(wire.OpRun, nil, nil)
	st := r.event(wire.EventStopped)
	if st.Frame.Func != "plugin_function" || st.Frame.File != "examples/dlopen/plugin.c" {
		t.Fatalf("stop in the plugin: %+v", st)
	}
	if got := r.print("x"); got != "21" {
		t.Fatalf("argument in the plugin: %q", got)
	}
}

func TestHaltAndProgramArguments(t *testing.T) {
	bin := testenv.Examples(t)
	r := newRank(t, 0, 2, "")
	r.start(filepath.Join(bin, "plain"), "30")
	r.must(wire.OpBreak, wire.Break{Location: "rest"}, nil)
	r.must(wire.OpRun, nil, nil)
	r.event(wire.EventStopped)
	r.must(wire.OpCont, nil, nil)
	r.event(wire.EventRunning)
	r.must(wire.OpHalt, nil, nil)
	if st := r.event(wire.EventStopped); st.Signal != "SIGINT" {
		t.Fatalf("halt: %+v", st)
	}
	var stack wire.Stack
	r.must(wire.OpWhere, nil, &stack)
	if !strings.Contains(fmt.Sprint(stack.Frames), "rest") {
		t.Fatalf("halted in %+v, want inside rest()", stack.Frames)
	}
	var st wire.State
	r.must(wire.OpStatus, nil, &st)
	if st.State != wire.StateStopped {
		t.Fatalf("status after halt: %+v", st)
	}
}

// A step that does not come back runs as itself from the frame it left:
// next from the innermost frame, finish from the selected one. Ranks that
// step from the same line answer status with the same bytes, so that they
// merge; the stop that ends the step leaves that behind.
func TestStepRunsFromWhereItBegan(t *testing.T) {
	bin := testenv.Examples(t)
	stepping := func(rank int, location, op string) (*rank, []byte) {
		r := newRank(t, rank, 3, "")
		r.start(filepath.Join(bin, "plain"), "30")
		r.must(wire.OpBreak, wire.Break{Location: location}, nil)
		r.must(wire.OpRun, nil, nil)
		r.event(wire.EventStopped)
		r.must(op, wire.Count{N: 1}, nil)
		body, err := r.do(wire.OpStatus, nil)
		if err != nil {
			t.Fatal(err)
		}
		return r, body
	}
	// plain.c:46 is main's call of rest(30): next takes 30 s.
	r0, next0 := stepping(0, "plain.c:46", wire.OpNext)
	_, next1 := stepping(1, "plain.c:46", wire.OpNext)
	var st wire.State
	wire.Decode(next0, &st)
	if st.State != wire.StateRunning || st.Reason != wire.OpNext || st.Frame.Func != "main" || st.Frame.Line != 46 {
		t.Fatalf("status during next: %+v", st)
	}
	if !bytes.Equal(next0, next1) {
		t.Fatal("two ranks stepping from the same line answer status with different bytes")
	}
	_, finish := stepping(2, "rest", wire.OpFinish)
	wire.Decode(finish, &st)
	if st.Reason != wire.OpFinish || st.Frame.Func != "rest" || !strings.HasSuffix(st.Frame.File, "plain.c") {
		t.Fatalf("status during finish: %+v", st)
	}

	r0.must(wire.OpHalt, nil, nil)
	if st := r0.event(wire.EventStopped); st.Signal != "SIGINT" {
		t.Fatalf("halt during next: %+v", st)
	}
	r0.must(wire.OpStatus, nil, &st)
	if st.State != wire.StateStopped || st.Reason == wire.OpNext {
		t.Fatalf("status after the halt: %+v", st)
	}
	// A later continue runs plainly.
	r0.must(wire.OpCont, nil, nil)
	r0.must(wire.OpStatus, nil, &st)
	if st.State != wire.StateRunning || st.Reason != "" || st.Frame.Func != "" {
		t.Fatalf("status during continue after a step: %+v", st)
	}
	r0.event(wire.EventRunning)
	r0.must(wire.OpStatus, nil, &st)
	if st.Reason != "" || st.Frame.Func != "" {
		t.Fatalf("status during continue after a step, once gdb said running: %+v", st)
	}
}

func TestStartErrors(t *testing.T) {
	r := newRank(t, 3, 4, filepath.Join(t.TempDir(), "no-gdb-here"))
	if _, err := r.do(wire.OpStart, wire.Start{Program: "/bin/true"}); err == nil || !strings.Contains(err.Error(), "gdb not found") {
		t.Fatalf("missing gdb: %v", err)
	}
	r = newRank(t, 3, 4, "")
	for program, want := range map[string]string{
		"./no-such-program":   "no such file",
		"no-such-in-path-xyz": "not found in $PATH",
		"/etc/passwd":         "not an executable",
	} {
		if _, err := r.do(wire.OpStart, wire.Start{Program: program, Dir: t.TempDir()}); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("start %s: %v, want %q", program, err, want)
		}
	}
	if _, err := r.do(wire.OpWhere, nil); err == nil || !strings.Contains(err.Error(), "no program loaded") {
		t.Fatalf("where before start: %v", err)
	}
	if _, err := r.do("frobnicate", nil); err == nil {
		t.Fatal("unknown op accepted")
	}
}

// When gdb dies, its rank says so at once and keeps answering with why.
func TestGDBDies(t *testing.T) {
	bin := testenv.Examples(t)
	r := newRank(t, 1, 2, "")
	r.start(filepath.Join(bin, "plain"), "30")
	pid := testenv.Child(t, os.Getpid(), "gdb")
	start := time.Now()
	syscall.Kill(pid, syscall.SIGKILL)
	st := r.event(wire.EventError)
	if time.Since(start) > 2*time.Second || !strings.Contains(st.Reason, "killed") {
		t.Fatalf("after %v: %q", time.Since(start), st.Reason)
	}
	if _, err := r.do(wire.OpStatus, nil); err == nil || !strings.Contains(err.Error(), "gdb") {
		t.Fatalf("status of a rank without gdb: %v", err)
	}
	// Starting again brings a new gdb.
	r.start(filepath.Join(bin, "plain"))
}
