package gdbmi

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/sdm-hpc/sdm/backend/program"
	"github.com/sdm-hpc/sdm/internal/debugregs"
	"github.com/sdm-hpc/sdm/internal/text"
	"github.com/sdm-hpc/sdm/mpiq"
	"github.com/sdm-hpc/sdm/wire"
)

// The methods of backend.Ops, one per op: every MI command sdm sends is
// here or in the helpers they call, so that the mapping from the op table
// to gdb can be read in one place. Bodies arrive decoded (backend.Decode).

// session returns the running gdb for a command of op, and the function
// that runs MI commands under ctx. Commands that need the process itself,
// not only its program, are answered with its death after one.
func (b *Backend) session(ctx context.Context, op string) (conn, func(string) (Record, string, error), error) {
	g, err := b.debugger()
	if err != nil {
		return nil, nil, err
	}
	b.mu.Lock()
	attached := b.attached
	b.mu.Unlock()
	if needsProcess[op] || (op == wire.OpRun && attached) {
		if err := b.deathError(); err != nil {
			return nil, nil, err
		}
	}
	if resumes[op] && b.ended() {
		// As gdb says it, before gdb may have heard of the end (a
		// shared gdb tells ends it reaped in its own time).
		return nil, nil, newRefusal("The program is not being run.")
	}
	return g, func(cmd string) (Record, string, error) { return g.Run(ctx, cmd) }, nil
}

// Start implements backend.Ops.
func (b *Backend) Start(ctx context.Context, st wire.Start) (wire.State, error) {
	return b.start(ctx, st)
}

// Attach implements backend.Ops.
func (b *Backend) Attach(ctx context.Context, a wire.Attach) (wire.Attached, error) {
	return b.attach(ctx, a)
}

// Status implements backend.Ops: the state the events told, without gdb.
func (b *Backend) Status(context.Context) (wire.State, error) { return b.status() }

// Halt implements backend.Ops.
func (b *Backend) Halt(context.Context) (wire.State, error) { return b.halt() }

// Run implements backend.Ops.
func (b *Backend) Run(ctx context.Context) (wire.State, error) {
	g, run, err := b.session(ctx, wire.OpRun)
	if err != nil {
		return wire.State{}, err
	}
	b.mu.Lock()
	attached := b.attached
	b.mu.Unlock()
	if attached {
		return b.resume(g, run, "-exec-continue") // it runs already: run it on
	}
	// A new process: its libraries are all to be read again. gdb ends the
	// one before, which is no news.
	b.mu.Lock()
	b.started, b.unread, b.held = false, false, false
	b.mu.Unlock()
	defer b.endingBy()()
	return b.resume(g, run, "-exec-run")
}

// Plant implements backend.Ops.
func (b *Backend) Plant(ctx context.Context) (wire.State, error) {
	g, _, err := b.session(ctx, wire.OpPlant)
	if err != nil {
		return wire.State{}, err
	}
	return b.plant(g)
}

// Detach implements backend.Ops.
func (b *Backend) Detach(ctx context.Context) (wire.State, error) {
	g, _, err := b.session(ctx, wire.OpDetach)
	if err != nil {
		return wire.State{}, err
	}
	defer b.endingBy()()
	return b.detach(ctx, g)
}

// Continue implements backend.Ops.
func (b *Backend) Continue(ctx context.Context) (wire.State, error) {
	return b.resumeBy(ctx, wire.OpCont, "-exec-continue")
}

// Step implements backend.Ops.
func (b *Backend) Step(ctx context.Context, c wire.Count) (wire.State, error) {
	return b.resumeBy(ctx, wire.OpStep, counted("-exec-step", c))
}

// Next implements backend.Ops.
func (b *Backend) Next(ctx context.Context, c wire.Count) (wire.State, error) {
	return b.resumeBy(ctx, wire.OpNext, counted("-exec-next", c))
}

// Finish implements backend.Ops.
func (b *Backend) Finish(ctx context.Context) (wire.State, error) {
	g, run, err := b.session(ctx, wire.OpFinish)
	if err != nil {
		return wire.State{}, err
	}
	// Out of an MPI routine whose caller is a wrapper of the queue
	// library (which backtraces leave out): out of the wrapper too, to
	// the program's frame, as without the library.
	if r, _, err := run("-stack-info-frame"); err == nil {
		above := r.Results.Get("frame").Int("level") + 1
		if r, _, err := run(fmt.Sprintf("-stack-list-frames %d %d", above, above)); err == nil {
			if fs := r.Results.Get("stack").Items(); len(fs) == 1 && mpiq.Wrapper(frame(fs[0]).From) {
				if _, _, err := run("-stack-select-frame " + strconv.Itoa(above)); err != nil {
					return wire.State{}, err
				}
			}
		}
	}
	return b.resume(g, run, "-exec-finish")
}

// resumeBy runs cmd, which sets the process going, for a command of op.
func (b *Backend) resumeBy(ctx context.Context, op, cmd string) (wire.State, error) {
	g, run, err := b.session(ctx, op)
	if err != nil {
		return wire.State{}, err
	}
	return b.resume(g, run, cmd)
}

// counted adds a repeat count to an MI command, where it is more than 1.
func counted(cmd string, c wire.Count) string {
	if c.N > 1 {
		cmd += " " + strconv.Itoa(c.N)
	}
	return cmd
}

// Kill implements backend.Ops.
func (b *Backend) Kill(ctx context.Context) (wire.State, error) {
	_, run, err := b.session(ctx, wire.OpKill)
	if err != nil {
		return wire.State{}, err
	}
	// The end is this command's news, not the watch's.
	defer b.endingBy()()
	if _, _, err := run(`-interpreter-exec console "kill"`); err != nil && !b.lastEnded() {
		// (A process that died while gdb killed it, say by its
		// starter's hand as its job ends, is what the kill asked for.)
		return wire.State{}, err
	}
	b.exited(wire.State{State: wire.StateExited, Reason: "killed"})
	return b.status()
}

// Break implements backend.Ops.
func (b *Backend) Break(ctx context.Context, br wire.Break) (wire.Breakpoint, error) {
	g, run, err := b.session(ctx, wire.OpBreak)
	if err != nil {
		return wire.Breakpoint{}, err
	}
	b.mu.Lock()
	loaded := b.loaded
	b.mu.Unlock()
	bp, err := breakInsert(run, br, loaded)
	if err == nil {
		b.mu.Lock()
		b.setTrace(bp.Number, br.Tracepoint, br.Trace)
		bp = b.traced(bp)
		b.mu.Unlock()
	}
	if err == nil {
		b.breakpointsChanged(g)
	}
	return bp, err
}

// Watch implements backend.Ops.
func (b *Backend) Watch(ctx context.Context, w wire.Watch) (wire.Breakpoint, error) {
	_, run, err := b.session(ctx, wire.OpWatch)
	if err != nil {
		return wire.Breakpoint{}, err
	}
	mode := map[string]string{"": "", "write": "", "read": "-r ", "access": "-a "}
	flag, ok := mode[w.Mode]
	if !ok {
		return wire.Breakpoint{}, fmt.Errorf("watch mode %q: want write, read or access", w.Mode)
	}
	r, _, err := run("-break-watch " + flag + Quote(w.Expr))
	if err != nil {
		if !debugregs.Work() && strings.Contains(err.Error(), "hardware watchpoints are disabled") {
			err = fmt.Errorf("%w (%s)", err, noDebugRegs)
		}
		return wire.Breakpoint{}, err
	}
	if !debugregs.Work() {
		b.mu.Lock()
		warn := !b.softWatchWarned
		b.softWatchWarned = true
		b.mu.Unlock()
		if warn {
			b.emit(wire.EventWarning, []byte("watchpoints are software ones: "+noDebugRegs+"; the rank runs a step at a time while one is set, far slower"))
		}
	}
	for _, key := range []string{"wpt", "hw-rwpt", "hw-awpt"} {
		if r.Results.Has(key) {
			v := r.Results.Get(key)
			return wire.Breakpoint{Number: v.Int("number"), Type: w.Mode + " watchpoint", Location: v.S("exp"), Enabled: true}, nil
		}
	}
	return wire.Breakpoint{}, fmt.Errorf("gdb set no watchpoint on %s", w.Expr)
}

// noDebugRegs says why a watchpoint is not a hardware one.
const noDebugRegs = "this machine's debug registers do not trap (a virtual machine that does not pass them on)"

// Delete implements backend.Ops.
func (b *Backend) Delete(ctx context.Context, ids wire.IDs) error {
	return b.breakIDs(ctx, wire.OpDelete, ids)
}

// Enable implements backend.Ops.
func (b *Backend) Enable(ctx context.Context, ids wire.IDs) error {
	return b.breakIDs(ctx, wire.OpEnable, ids)
}

// Disable implements backend.Ops.
func (b *Backend) Disable(ctx context.Context, ids wire.IDs) error {
	return b.breakIDs(ctx, wire.OpDisable, ids)
}

// breakIDs runs -break-delete, -break-enable or -break-disable (op) on
// breakpoints ids.
func (b *Backend) breakIDs(ctx context.Context, op string, ids wire.IDs) error {
	g, run, err := b.session(ctx, op)
	if err != nil {
		return err
	}
	// No numbers deletes them all, as gdb's delete does.
	if len(ids.IDs) == 0 && op != wire.OpDelete {
		return fmt.Errorf("%s: no breakpoint numbers", op)
	}
	cmd := "-break-" + op
	for _, id := range ids.IDs {
		cmd += " " + strconv.Itoa(id)
	}
	_, out, err := run(cmd)
	if err != nil {
		return err
	}
	if op == wire.OpDelete {
		b.mu.Lock()
		b.dropTraces(ids.IDs)
		b.mu.Unlock()
	}
	b.breakpointsChanged(g)
	// gdb acts on the numbers it has and only says so of the others,
	// in words ("No breakpoint number 9."), with a ^done.
	if missing := strings.TrimSpace(out); strings.HasPrefix(missing, "No breakpoint number") {
		return fmt.Errorf("%s", strings.ReplaceAll(missing, "\n", " "))
	}
	return nil
}

// Condition implements backend.Ops.
func (b *Backend) Condition(ctx context.Context, c wire.Condition) error {
	_, run, err := b.session(ctx, wire.OpCondition)
	if err != nil {
		return err
	}
	cmd := "-break-condition " + strconv.Itoa(c.ID)
	if c.Expr != "" {
		cmd += " " + c.Expr
	}
	_, _, err = run(cmd)
	return err
}

// Ignore implements backend.Ops.
func (b *Backend) Ignore(ctx context.Context, ig wire.Ignore) error {
	_, run, err := b.session(ctx, wire.OpIgnore)
	if err != nil {
		return err
	}
	_, _, err = run(fmt.Sprintf("-break-after %d %d", ig.ID, ig.Count))
	return err
}

// BreakNext implements backend.Ops.
func (b *Backend) BreakNext(ctx context.Context, c wire.Count) error {
	_, run, err := b.session(ctx, wire.OpBreakNext)
	if err != nil {
		return err
	}
	return breakNext(run, c.N)
}

// Breakpoints implements backend.Ops.
func (b *Backend) Breakpoints(ctx context.Context) ([]wire.Breakpoint, error) {
	r, err := b.run1(ctx, wire.OpBreakList, "-break-list")
	if err != nil {
		return nil, err
	}
	var list []wire.Breakpoint
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, v := range r.Results.Get("BreakpointTable").Get("body").Items() {
		list = append(list, b.traced(breakpoint(v)))
	}
	return list, nil
}

// run1 runs one MI command for a command of op.
func (b *Backend) run1(ctx context.Context, op, cmd string) (Record, error) {
	_, run, err := b.session(ctx, op)
	if err != nil {
		return Record{}, err
	}
	r, _, err := run(cmd)
	return r, err
}

// Where implements backend.Ops: the selected thread's stack, or, of a
// rank that runs, the main thread's, taken in passing (look).
func (b *Backend) Where(ctx context.Context) (wire.Stack, error) {
	var st wire.Stack
	err := b.look(ctx, wire.OpWhere, func(run func(string) (Record, string, error)) error {
		r, _, err := run("-stack-list-frames")
		for _, v := range r.Results.Get("stack").Items() {
			st.Frames = append(st.Frames, frame(v))
		}
		st.Frames = mpiq.Unwrap(st.Frames)
		return err
	})
	return st, err
}

// Frame implements backend.Ops.
func (b *Backend) Frame(ctx context.Context, c wire.Count) (wire.Frame, error) {
	_, run, err := b.session(ctx, wire.OpFrame)
	if err != nil {
		return wire.Frame{}, err
	}
	if _, _, err := run("-stack-select-frame " + strconv.Itoa(c.N)); err != nil {
		return wire.Frame{}, err
	}
	r, _, err := run("-stack-info-frame")
	if err != nil {
		return wire.Frame{}, err
	}
	return frame(r.Results.Get("frame")), nil
}

// Depth implements backend.Ops.
func (b *Backend) Depth(ctx context.Context) (wire.Count, error) {
	r, err := b.run1(ctx, wire.OpDepth, "-stack-info-depth")
	if err != nil {
		return wire.Count{}, err
	}
	return wire.Count{N: r.Results.Int("depth")}, nil
}

// Locals implements backend.Ops.
func (b *Backend) Locals(ctx context.Context) ([]wire.Var, error) {
	_, run, err := b.session(ctx, wire.OpLocals)
	if err != nil {
		return nil, err
	}
	return listVars(run, "-stack-list-locals %s", func(r Record) Value { return r.Results.Get("locals") })
}

// listVars lists a frame's variables with cmd, given gdb's option for what
// it shows of them: with their types (--simple-values, which leaves out
// aggregates' values), then with all their values (--all-values, which
// leaves out the types), the two lists in the same order.
func listVars(run func(string) (Record, string, error), cmd string, list func(Record) Value) ([]wire.Var, error) {
	typed, _, err := run(fmt.Sprintf(cmd, "--simple-values"))
	if err != nil {
		return nil, err
	}
	valued, _, err := run(fmt.Sprintf(cmd, "--all-values"))
	if err != nil {
		return nil, err
	}
	return vars(list(typed), list(valued)), nil
}

// Args implements backend.Ops.
func (b *Backend) Args(ctx context.Context) ([]wire.Var, error) {
	_, run, err := b.session(ctx, wire.OpArgs)
	if err != nil {
		return nil, err
	}
	return listVars(run, "-stack-list-arguments %s 0 0", func(r Record) Value {
		frames := r.Results.Get("stack-args").Items()
		if len(frames) == 0 {
			return Value{}
		}
		return frames[0].Get("args")
	})
}

// Globals implements backend.Ops.
func (b *Backend) Globals(ctx context.Context) ([]wire.Var, error) {
	_, run, err := b.session(ctx, wire.OpGlobals)
	if err != nil {
		return nil, err
	}
	b.mu.Lock()
	pid := b.pid
	b.mu.Unlock()
	return globals(run, pid)
}

// Print implements backend.Ops.
func (b *Backend) Print(ctx context.Context, e wire.Expr) (wire.Text, error) {
	_, run, err := b.session(ctx, wire.OpPrint)
	if err != nil {
		return wire.Text{}, err
	}
	r, _, err := run("-data-evaluate-expression " + Quote(e.Expr))
	if err != nil {
		return wire.Text{}, err
	}
	return wire.Text{Text: referred(run, e.Expr, r.Results.S("value"))}, nil
}

// Ptype implements backend.Ops.
func (b *Backend) Ptype(ctx context.Context, e wire.Expr) (wire.Text, error) {
	return b.console(ctx, wire.OpPtype, "ptype "+e.Expr)
}

// Signals implements backend.Ops.
func (b *Backend) Signals(ctx context.Context) (wire.Text, error) {
	return b.console(ctx, wire.OpSignals, "info signals")
}

// Handle implements backend.Ops.
func (b *Backend) Handle(ctx context.Context, t wire.Text) (wire.Text, error) {
	return b.console(ctx, wire.OpHandle, "handle "+t.Text)
}

// console runs a CLI command for a command of op.
func (b *Backend) console(ctx context.Context, op, command string) (wire.Text, error) {
	_, run, err := b.session(ctx, op)
	if err != nil {
		return wire.Text{}, err
	}
	return console(run, command)
}

// Threads implements backend.Ops.
func (b *Backend) Threads(ctx context.Context) ([]wire.Thread, error) {
	r, err := b.run1(ctx, wire.OpThreads, "-thread-info")
	if err != nil {
		return nil, err
	}
	current := r.Results.Int("current-thread-id")
	var threads []wire.Thread
	for _, v := range r.Results.Get("threads").Items() {
		threads = append(threads, thread(v, current))
	}
	return threads, nil
}

// Thread implements backend.Ops.
func (b *Backend) Thread(ctx context.Context, c wire.Count) (wire.Thread, error) {
	r, err := b.run1(ctx, wire.OpThread, "-thread-select "+strconv.Itoa(c.N))
	if err != nil {
		return wire.Thread{}, err
	}
	id := r.Results.Int("new-thread-id")
	return wire.Thread{ID: id, Frame: frame(r.Results.Get("frame")), Current: true}, nil
}

// MemRead implements backend.Ops.
func (b *Backend) MemRead(ctx context.Context, m wire.Memory) (wire.Memory, error) {
	_, run, err := b.session(ctx, wire.OpMemRead)
	if err != nil {
		return wire.Memory{}, err
	}
	if m.Count <= 0 || m.Count > 1<<16 {
		return wire.Memory{}, fmt.Errorf("x: read 1 to 65536 bytes, not %d", m.Count)
	}
	r, _, err := run(fmt.Sprintf("-data-read-memory-bytes %s %d", Quote(m.Addr), m.Count))
	if err != nil {
		return wire.Memory{}, err
	}
	var hex strings.Builder
	begin := ""
	for i, blk := range r.Results.Get("memory").Items() {
		if i == 0 {
			begin = blk.S("begin")
		}
		hex.WriteString(blk.S("contents"))
	}
	return wire.Memory{Addr: begin, Count: hex.Len() / 2, Hex: hex.String()}, nil
}

// MemSet implements backend.Ops.
func (b *Backend) MemSet(ctx context.Context, m wire.Memory) error {
	_, run, err := b.session(ctx, wire.OpMemSet)
	if err != nil {
		return err
	}
	if m.Hex == "" || len(m.Hex)%2 != 0 || strings.Trim(m.Hex, "0123456789abcdefABCDEF") != "" {
		return fmt.Errorf("poke: %q is not an even number of hex digits", m.Hex)
	}
	_, _, err = run(fmt.Sprintf("-data-write-memory-bytes %s %s", Quote(m.Addr), m.Hex))
	return err
}

// Raw implements backend.Ops.
func (b *Backend) Raw(ctx context.Context, t wire.Text) (wire.Text, error) {
	g, _, err := b.session(ctx, wire.OpRaw)
	if err != nil {
		return wire.Text{}, err
	}
	return b.raw(ctx, g, t.Text)
}

// resumes are the commands that set the process going.
var resumes = map[string]bool{wire.OpCont: true, wire.OpStep: true, wire.OpNext: true, wire.OpFinish: true}

// ended says whether the process's end has been told.
func (b *Backend) ended() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.state.State == wire.StateExited
}

// needsProcess are the commands that need the process itself, not only
// its program: after a death they are answered with the death.
var needsProcess = map[string]bool{
	wire.OpCont: true, wire.OpStep: true, wire.OpNext: true, wire.OpFinish: true, wire.OpKill: true,
	wire.OpDetach: true, wire.OpWhere: true, wire.OpFrame: true, wire.OpDepth: true, wire.OpLocals: true,
	wire.OpArgs: true, wire.OpThreads: true, wire.OpThread: true, wire.OpMemRead: true, wire.OpMemSet: true,
	wire.OpBacktrace: true, wire.OpUp: true, wire.OpFrameInfo: true, wire.OpRegisters: true,
}

// raw passes a command to gdb as it is: an MI command when it starts
// with -, else a CLI one. It may end the process (kill, run) or gdb
// itself (quit, -gdb-exit): a death meanwhile is reported after it,
// unless gdb reported or caused it, and gdb's end is reported (the error
// event, every later command answered with it) before the answer.
func (b *Backend) raw(ctx context.Context, g conn, text string) (wire.Text, error) {
	// gdb's own commands may set or delete breakpoints too.
	defer b.breakpointsChanged(g)
	b.mu.Lock()
	watched := b.watched
	b.mu.Unlock()
	after := b.rawEnds()
	var answer wire.Text
	var err error
	exit := false // gdb answered ^exit: it ends
	if strings.HasPrefix(text, "-") {
		var r Record
		var out string
		if r, out, err = g.Run(ctx, text); err == nil {
			exit = r.Class == "exit"
			answer = wire.Text{Text: out + r.Class + formatResults(r.Results)}
		}
	} else {
		answer, err = console(func(cmd string) (Record, string, error) { return g.Run(ctx, cmd) }, text)
	}
	ends := exit || g.Ended()
	after(ctx, g, ends)
	if ends {
		select {
		case <-watched:
		case <-ctx.Done():
		}
	}
	return answer, err
}

// debugger returns the running gdb, or why there is none.
func (b *Backend) debugger() (conn, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.gdb == nil {
		return nil, fmt.Errorf("no program loaded (start one first)")
	}
	select {
	case <-b.gdb.Done():
		return nil, b.gdb.Err()
	default:
		return b.gdb, nil
	}
}

// start (re)starts gdb if needed and loads the program with its arguments,
// directory and environment, on its own terminal. It does not run it.
func (b *Backend) start(ctx context.Context, st wire.Start) (wire.State, error) {
	st = mpiq.Preload(st)
	prog, err := program.Find(st.Program, st.Dir)
	if err != nil {
		return wire.State{}, err
	}
	g, err := b.debugger()
	if err != nil {
		if g, err = b.launch(); err != nil {
			return wire.State{}, err
		}
	}
	b.mu.Lock()
	tty := b.term.Name()
	b.mu.Unlock()
	// The CLI's set environment keeps a value exactly; -gdb-set would
	// split it at spaces.
	setenv := func(kv string) string { return "-interpreter-exec console " + Quote("set environment "+kv) }
	cmds := []string{
		"-file-exec-and-symbols " + Quote(prog),
		"-inferior-tty-set " + tty,
		setenv(fmt.Sprintf("SDM_RANK=%d", b.cfg.Rank)),
		setenv(fmt.Sprintf("SDM_SIZE=%d", b.cfg.Size)),
	}
	if len(st.Args) > 0 {
		// gdb starts the program through a shell, and -exec-arguments
		// gives it each argument in double quotes, where $VAR still
		// expands: set args, quoted for that shell, gives the program its
		// arguments as they were given, as it gets them without gdb.
		quoted := make([]string, len(st.Args))
		for i, a := range st.Args {
			quoted[i] = text.ShellQuote(a)
		}
		cmds = append(cmds, "-interpreter-exec console "+Quote("set args "+strings.Join(quoted, " ")))
	}
	if st.Dir != "" {
		cmds = append(cmds, "-environment-cd "+Quote(st.Dir))
	}
	for _, kv := range st.Env {
		if !strings.Contains(kv, "=") {
			return wire.State{}, fmt.Errorf("environment entry %q is not NAME=VALUE", kv)
		}
		cmds = append(cmds, setenv(kv))
	}
	for _, cmd := range cmds {
		if _, _, err := g.Run(ctx, cmd); err != nil {
			return wire.State{}, fmt.Errorf("%s: %w", prog, err)
		}
	}
	loaded := loadedProgram{name: st.Program, path: prog, dir: st.Dir,
		symbols: hasSymbols(func(cmd string) (Record, string, error) { return g.Run(ctx, cmd) }, prog)}
	b.mu.Lock()
	b.loaded = loaded
	b.mu.Unlock()
	if !loaded.symbols {
		b.emit(wire.EventWarning, []byte("no debugging symbols in "+st.Program+
			": lines, variables and FILE:LINE breakpoints need it built with -g"))
	}
	b.setState(wire.State{State: wire.StateNotStarted, Reason: "loaded"})
	return b.status()
}

// launch starts gdb with the settings every session needs and the
// program's terminal.
func (b *Backend) launch() (conn, error) {
	g, err := b.startGDB()
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	for _, cmd := range append([]string{
		"-gdb-set mi-async on", // commands (and halt) work while the program runs
		"-gdb-set confirm off", // kill and friends must not ask
		"-gdb-set width 0",     // no line wrapping in console output
		"-gdb-set height 0",    // no paging
		"-gdb-set print pretty off",
		// Variable objects as the pretty-printers show them (VarObjs).
		"-enable-pretty-printing",
		// A debuginfod lookup per library per rank would stall a large job
		// on the network, or on its absence.
		"-gdb-set debuginfod enabled off",
		// Loads are the backend's to handle, by the dlopen setting
		// (solib.go): gdb reads no library on its own, and stops at each
		// load until the program's start-up libraries have been read.
		"-gdb-set auto-solib-add off",
		"-gdb-set stop-on-solib-events 1",
	}, indexCache()...) {
		if _, _, err := g.Run(ctx, cmd); err != nil {
			g.Kill()
			return nil, fmt.Errorf("gdb did not accept %q: %w", cmd, err)
		}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		g.Kill()
		return nil, ErrClosed
	}
	if b.term == nil {
		term, err := program.OpenTerminal()
		if err != nil {
			g.Kill()
			return nil, err
		}
		b.term = term
		b.out = program.NewOutput(term, b, &b.wg)
	}
	watched := make(chan struct{})
	b.gdb, b.watched = g, watched
	b.solib = solibVars{stop: true}
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		b.watch(g, watched)
	}()
	return g, nil
}

// resume runs a command that sets the program going (letGo); the stop
// that ends it arrives as an event. gdb answers ^running before its
// *running record reaches the watcher, so the state is set here. A step
// (step, next, finish) runs as itself from the frame it leaves, which a
// step over a call that waits for other ranks may never get back to.
func (b *Backend) resume(g conn, run func(string) (Record, string, error), cmd string) (wire.State, error) {
	name := strings.TrimPrefix(strings.Fields(cmd)[0], "-exec-")
	step := name != "continue" && name != "run"
	if err := b.beforeResume(g, step); err != nil {
		return wire.State{}, err
	}
	running := wire.State{State: wire.StateRunning}
	if step {
		running.Reason, running.Frame = name, b.stepFrom(run, name)
	}
	err := b.letGo(func() error {
		b.setGoing(running)
		if _, _, err := run(cmd); err != nil {
			b.setGoing(wire.State{})
			return err
		}
		return nil
	}, running)
	if err != nil {
		return wire.State{}, err
	}
	return running, nil
}

// stepFrom is the frame a step leaves: finish leaves the selected frame,
// step and next the innermost one (gdb's rules). Should gdb not say, the
// frame of the last stop stands in.
func (b *Backend) stepFrom(run func(string) (Record, string, error), step string) wire.Frame {
	cmd, innermost := "-stack-list-frames 0 0", true
	if step == "finish" {
		cmd, innermost = "-stack-info-frame", false
	}
	if r, _, err := run(cmd); err == nil {
		if !innermost {
			return frame(r.Results.Get("frame"))
		}
		if frames := r.Results.Get("stack").Items(); len(frames) > 0 {
			return frame(frames[0])
		}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.state.Frame
}

// breakInsert plants a breakpoint, pending (-f) where gdb knows no such
// location yet, except on a file that the program p cannot have
// (sources.go).
func breakInsert(run func(string) (Record, string, error), br wire.Break, p loadedProgram) (wire.Breakpoint, error) {
	if strings.TrimSpace(br.Location) == "" {
		return wire.Breakpoint{}, fmt.Errorf("break: no location")
	}
	cmd := "-break-insert"
	if br.Temporary {
		cmd += " -t"
	}
	if br.Condition != "" {
		cmd += " -c " + Quote(br.Condition)
	}
	if br.Ignore > 0 {
		cmd += " -i " + strconv.Itoa(br.Ignore)
	}
	if br.Thread > 0 {
		cmd += " -p " + strconv.Itoa(br.Thread)
	}
	r, _, err := run(cmd + " " + Quote(br.Location))
	if err != nil && refused(err) {
		if m := sourceLine().FindStringSubmatch(br.Location); m != nil {
			switch {
			case p.symbols && !errors.Is(err, ErrNoSource):
				return wire.Breakpoint{}, err // the file is the program's: no such line
			case !mayLoadLater(run, p, m[1]):
				return wire.Breakpoint{}, p.noSource(m[1])
			}
		}
		r, _, err = run(cmd + " -f " + Quote(br.Location))
	}
	if err != nil {
		return wire.Breakpoint{}, err
	}
	return breakpoint(r.Results.Get("bkpt")), nil
}

// breakNext makes n the number of the next breakpoint: gdb has no setting
// for it, so each number below n not used yet goes to a placeholder, made
// and deleted again. A placeholder is a disabled breakpoint at address 0,
// which needs no symbols and is never inserted into the program.
func breakNext(run func(string) (Record, string, error), n int) error {
	r, _, err := run("-data-evaluate-expression $bpnum")
	if err != nil {
		return err
	}
	last, err := strconv.Atoi(r.Results.S("value"))
	if err != nil {
		last = 0 // void: no breakpoint yet
	}
	if last >= n {
		return fmt.Errorf("breakpoint numbers are used up to %d already: the next cannot be %d", last, n)
	}
	var made []string
	for last < n-1 {
		r, _, err := run("-break-insert -d *0")
		if err != nil {
			return fmt.Errorf("breakpoint number %d: %w", last+1, err)
		}
		num := r.Results.Get("bkpt").Int("number")
		if num <= last {
			return fmt.Errorf("gdb numbered a placeholder %d after breakpoint %d", num, last)
		}
		last = num
		made = append(made, strconv.Itoa(last))
	}
	if len(made) == 0 {
		return nil
	}
	_, _, err = run("-break-delete " + strings.Join(made, " "))
	return err
}

// breakpoint converts an MI bkpt tuple, leaving out the address and the
// hit count, which differ between ranks.
func breakpoint(v Value) wire.Breakpoint {
	bp := wire.Breakpoint{
		Number:    v.Int("number"),
		Type:      v.S("type"),
		Func:      v.S("func"),
		Enabled:   v.S("enabled") == "y",
		Temporary: v.S("disp") == "del",
		Condition: v.S("cond"),
		Ignore:    v.Int("ignore"),
		Original:  v.S("original-location"),
	}
	switch {
	case v.Has("pending"):
		bp.Pending, bp.Location = true, v.S("pending")
	case v.Has("file"):
		bp.Location = v.S("file") + ":" + v.S("line")
	case v.Has("what"):
		bp.Location = v.S("what")
	case v.Has("locations"):
		bp.Location = fmt.Sprintf("%d locations", len(v.Get("locations").Items()))
	default:
		bp.Location = v.S("original-location")
	}
	return bp
}

// vars converts a list of variables with their types and the same list
// with their values (an aggregate's whole value, bounded by gdb's print
// elements).
func vars(typed, valued Value) []wire.Var {
	out := []wire.Var{}
	values := valued.Items()
	for i, v := range typed.Items() {
		value := v.S("value")
		if i < len(values) && values[i].S("name") == v.S("name") {
			value = values[i].S("value")
		}
		out = append(out, wire.Var{Name: v.S("name"), Type: v.S("type"), Value: dereferenced(value), Index: i})
	}
	return out
}

func thread(v Value, current int) wire.Thread {
	id, _ := strconv.Atoi(v.S("id"))
	return wire.Thread{ID: id, Name: v.S("name"), State: v.S("state"), Frame: frame(v.Get("frame")), Current: id == current}
}

// startTimeout bounds gdb's start-up commands.
const startTimeout = 30 * time.Second

// console runs a CLI command and answers with what it printed.
func console(run func(string) (Record, string, error), command string) (wire.Text, error) {
	_, text, err := run("-interpreter-exec console " + Quote(command))
	if err != nil {
		return wire.Text{}, err
	}
	return wire.Text{Text: strings.TrimRight(text, "\n")}, nil
}

// formatResults prints MI results back in MI syntax, for raw MI commands.
func formatResults(v Value) string {
	var b strings.Builder
	for _, f := range v.Fields {
		b.WriteByte(',')
		b.WriteString(f.Name)
		b.WriteByte('=')
		formatValue(&b, f.Value)
	}
	return b.String()
}

func formatValue(b *strings.Builder, v Value) {
	switch v.Kind {
	case String:
		b.WriteString(Quote(v.Str))
		return
	case Tuple:
		b.WriteByte('{')
	case List:
		b.WriteByte('[')
	}
	for i, f := range v.Fields {
		if i > 0 {
			b.WriteByte(',')
		}
		if f.Name != "" {
			b.WriteString(f.Name + "=")
		}
		formatValue(b, f.Value)
	}
	if v.Kind == Tuple {
		b.WriteByte('}')
	} else {
		b.WriteByte(']')
	}
}
