package gdbmi

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/sdm-hpc/sdm/backend"
	"github.com/sdm-hpc/sdm/wire"
)

// handle runs one command. Every MI command sdm sends is here, so that
// the mapping from the PTP command set to gdb can be read in one place.
func (b *Backend) handle(ctx context.Context, op string, body []byte) ([]byte, error) {
	switch op {
	case wire.OpStart:
		var st wire.Start
		if err := wire.Decode(body, &st); err != nil {
			return nil, err
		}
		return b.start(ctx, st)
	case wire.OpAttach:
		var a wire.Attach
		if err := wire.Decode(body, &a); err != nil {
			return nil, err
		}
		return b.attach(ctx, a)
	case wire.OpDlopen:
		return b.setDlopen(body) // also before there is a gdb: it applies from the start
	}
	g, err := b.debugger()
	if err != nil {
		return nil, err
	}
	run := func(cmd string) (Record, string, error) { return g.Run(ctx, cmd) }
	b.mu.Lock()
	attached := b.attached
	b.mu.Unlock()
	if needsProcess[op] || (op == wire.OpRun && attached) {
		if err := b.deathError(); err != nil {
			return nil, err
		}
	}
	switch op {
	case wire.OpRun:
		if attached {
			return b.resume(g, run, "-exec-continue") // it runs already: run it on
		}
		// A new process: its libraries are all to be read again. gdb
		// ends the one before, which is no news.
		b.mu.Lock()
		b.started, b.unread, b.held = false, false, false
		b.mu.Unlock()
		defer b.endingBy()()
		return b.resume(g, run, "-exec-run")
	case wire.OpPlant:
		return b.plant(g)
	case wire.OpDetach:
		defer b.endingBy()()
		return b.detach(ctx, g)
	case wire.OpCont:
		return b.resume(g, run, "-exec-continue")
	case wire.OpStep, wire.OpNext:
		var c wire.Count
		if err := decodeOptional(body, &c); err != nil {
			return nil, err
		}
		cmd := "-exec-" + op
		if c.N > 1 {
			cmd += " " + strconv.Itoa(c.N)
		}
		return b.resume(g, run, cmd)
	case wire.OpFinish:
		return b.resume(g, run, "-exec-finish")
	case wire.OpKill:
		// The end is this command's news, not the watch's.
		defer b.endingBy()()
		if _, _, err := run(`-interpreter-exec console "kill"`); err != nil {
			return nil, err
		}
		b.exited(wire.State{State: wire.StateExited, Reason: "killed"})
		return b.status()

	case wire.OpBreak:
		var br wire.Break
		if err := wire.Decode(body, &br); err != nil {
			return nil, err
		}
		out, err := breakInsert(run, br)
		if err == nil {
			b.breakpointsChanged(g)
		}
		return out, err
	case wire.OpWatch:
		var w wire.Watch
		if err := wire.Decode(body, &w); err != nil {
			return nil, err
		}
		mode := map[string]string{"": "", "write": "", "read": "-r ", "access": "-a "}
		flag, ok := mode[w.Mode]
		if !ok {
			return nil, fmt.Errorf("watch mode %q: want write, read or access", w.Mode)
		}
		r, _, err := run("-break-watch " + flag + Quote(w.Expr))
		if err != nil {
			return nil, err
		}
		for _, key := range []string{"wpt", "hw-rwpt", "hw-awpt"} {
			if r.Results.Has(key) {
				v := r.Results.Get(key)
				return wire.Encode(wire.Breakpoint{Number: v.Int("number"), Type: w.Mode + " watchpoint", Location: v.S("exp"), Enabled: true})
			}
		}
		return nil, fmt.Errorf("gdb set no watchpoint on %s", w.Expr)
	case wire.OpDelete, wire.OpEnable, wire.OpDisable:
		var ids wire.IDs
		if err := wire.Decode(body, &ids); err != nil {
			return nil, err
		}
		if len(ids.IDs) == 0 {
			return nil, fmt.Errorf("%s: no breakpoint numbers", op)
		}
		args := make([]string, len(ids.IDs))
		for i, id := range ids.IDs {
			args[i] = strconv.Itoa(id)
		}
		_, _, err := run("-break-" + op + " " + strings.Join(args, " "))
		if err == nil {
			b.breakpointsChanged(g)
		}
		return nil, err
	case wire.OpCondition:
		var c wire.Condition
		if err := wire.Decode(body, &c); err != nil {
			return nil, err
		}
		cmd := "-break-condition " + strconv.Itoa(c.ID)
		if c.Expr != "" {
			cmd += " " + c.Expr
		}
		_, _, err := run(cmd)
		return nil, err
	case wire.OpIgnore:
		var ig wire.Ignore
		if err := wire.Decode(body, &ig); err != nil {
			return nil, err
		}
		_, _, err := run(fmt.Sprintf("-break-after %d %d", ig.ID, ig.Count))
		return nil, err
	case wire.OpBreakNext:
		var c wire.Count
		if err := wire.Decode(body, &c); err != nil {
			return nil, err
		}
		return nil, breakNext(run, c.N)
	case wire.OpBreakList:
		r, _, err := run("-break-list")
		if err != nil {
			return nil, err
		}
		var list []wire.Breakpoint
		for _, v := range r.Results.Get("BreakpointTable").Get("body").Items() {
			list = append(list, breakpoint(v))
		}
		return wire.Encode(list)

	case wire.OpWhere:
		r, _, err := run("-stack-list-frames")
		if err != nil {
			return nil, err
		}
		var st wire.Stack
		for _, v := range r.Results.Get("stack").Items() {
			st.Frames = append(st.Frames, frame(v))
		}
		return wire.Encode(st)
	case wire.OpFrame:
		var c wire.Count
		if err := decodeOptional(body, &c); err != nil {
			return nil, err
		}
		if _, _, err := run("-stack-select-frame " + strconv.Itoa(c.N)); err != nil {
			return nil, err
		}
		r, _, err := run("-stack-info-frame")
		if err != nil {
			return nil, err
		}
		return wire.Encode(frame(r.Results.Get("frame")))
	case wire.OpDepth:
		r, _, err := run("-stack-info-depth")
		if err != nil {
			return nil, err
		}
		return wire.Encode(wire.Count{N: r.Results.Int("depth")})
	case wire.OpLocals:
		r, _, err := run("-stack-list-locals --simple-values")
		if err != nil {
			return nil, err
		}
		return wire.Encode(vars(r.Results.Get("locals")))
	case wire.OpArgs:
		r, _, err := run("-stack-list-arguments --simple-values 0 0")
		if err != nil {
			return nil, err
		}
		frames := r.Results.Get("stack-args").Items()
		if len(frames) == 0 {
			return wire.Encode([]wire.Var{})
		}
		return wire.Encode(vars(frames[0].Get("args")))
	case wire.OpGlobals:
		b.mu.Lock()
		pid := b.pid
		b.mu.Unlock()
		return globals(run, pid)
	case wire.OpPrint:
		var e wire.Expr
		if err := wire.Decode(body, &e); err != nil {
			return nil, err
		}
		r, _, err := run("-data-evaluate-expression " + Quote(e.Expr))
		if err != nil {
			return nil, err
		}
		return wire.Encode(wire.Text{Text: r.Results.S("value")})
	case wire.OpPtype:
		var e wire.Expr
		if err := wire.Decode(body, &e); err != nil {
			return nil, err
		}
		return console(run, "ptype "+e.Expr)
	case wire.OpThreads:
		r, _, err := run("-thread-info")
		if err != nil {
			return nil, err
		}
		current := r.Results.Int("current-thread-id")
		var threads []wire.Thread
		for _, v := range r.Results.Get("threads").Items() {
			threads = append(threads, thread(v, current))
		}
		return wire.Encode(threads)
	case wire.OpThread:
		var c wire.Count
		if err := wire.Decode(body, &c); err != nil {
			return nil, err
		}
		r, _, err := run("-thread-select " + strconv.Itoa(c.N))
		if err != nil {
			return nil, err
		}
		id := r.Results.Int("new-thread-id")
		return wire.Encode(wire.Thread{ID: id, Frame: frame(r.Results.Get("frame")), Current: true})
	case wire.OpMemRead:
		var m wire.Memory
		if err := wire.Decode(body, &m); err != nil {
			return nil, err
		}
		if m.Count <= 0 || m.Count > 1<<16 {
			return nil, fmt.Errorf("x: read 1 to 65536 bytes, not %d", m.Count)
		}
		r, _, err := run(fmt.Sprintf("-data-read-memory-bytes %s %d", Quote(m.Addr), m.Count))
		if err != nil {
			return nil, err
		}
		var hex strings.Builder
		begin := ""
		for i, blk := range r.Results.Get("memory").Items() {
			if i == 0 {
				begin = blk.S("begin")
			}
			hex.WriteString(blk.S("contents"))
		}
		return wire.Encode(wire.Memory{Addr: begin, Count: hex.Len() / 2, Hex: hex.String()})
	case wire.OpMemSet:
		var m wire.Memory
		if err := wire.Decode(body, &m); err != nil {
			return nil, err
		}
		if m.Hex == "" || len(m.Hex)%2 != 0 || strings.Trim(m.Hex, "0123456789abcdefABCDEF") != "" {
			return nil, fmt.Errorf("poke: %q is not an even number of hex digits", m.Hex)
		}
		_, _, err := run(fmt.Sprintf("-data-write-memory-bytes %s %s", Quote(m.Addr), m.Hex))
		return nil, err
	case wire.OpSignals:
		return console(run, "info signals")
	case wire.OpHandle:
		var t wire.Text
		if err := wire.Decode(body, &t); err != nil {
			return nil, err
		}
		return console(run, "handle "+t.Text)
	case wire.OpRaw:
		var t wire.Text
		if err := wire.Decode(body, &t); err != nil {
			return nil, err
		}
		return b.raw(ctx, g, t.Text)
	}
	return nil, fmt.Errorf("%w %q", backend.ErrUnknownOp, op)
}

// needsProcess are the commands that need the process itself, not only
// its program: after a death they are answered with the death.
var needsProcess = map[string]bool{
	wire.OpCont: true, wire.OpStep: true, wire.OpNext: true, wire.OpFinish: true, wire.OpKill: true,
	wire.OpDetach: true, wire.OpWhere: true, wire.OpFrame: true, wire.OpDepth: true, wire.OpLocals: true,
	wire.OpArgs: true, wire.OpThreads: true, wire.OpThread: true, wire.OpMemRead: true, wire.OpMemSet: true,
}

// raw passes a command to gdb as it is: an MI command when it starts
// with -, else a CLI one. It may end the process (kill, run) or gdb
// itself (quit, -gdb-exit): a death meanwhile is reported after it,
// unless gdb reported or caused it, and gdb's end is reported (the error
// event, every later command answered with it) before the answer.
func (b *Backend) raw(ctx context.Context, g *GDB, text string) ([]byte, error) {
	// gdb's own commands may set or delete breakpoints too.
	defer b.breakpointsChanged(g)
	b.mu.Lock()
	watched := b.watched
	b.mu.Unlock()
	after := b.rawEnds()
	var answer []byte
	var err error
	exit := false // gdb answered ^exit: it ends
	if strings.HasPrefix(text, "-") {
		var r Record
		var out string
		if r, out, err = g.Run(ctx, text); err == nil {
			exit = r.Class == "exit"
			answer, err = wire.Encode(wire.Text{Text: out + r.Class + formatResults(r.Results)})
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
func (b *Backend) debugger() (*GDB, error) {
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
func (b *Backend) start(ctx context.Context, st wire.Start) ([]byte, error) {
	prog, err := program(st.Program, st.Dir)
	if err != nil {
		return nil, err
	}
	g, err := b.debugger()
	if err != nil {
		if g, err = b.launch(); err != nil {
			return nil, err
		}
	}
	b.mu.Lock()
	tty := b.term.name
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
		quoted := make([]string, len(st.Args))
		for i, a := range st.Args {
			quoted[i] = Quote(a)
		}
		cmds = append(cmds, "-exec-arguments "+strings.Join(quoted, " "))
	}
	if st.Dir != "" {
		cmds = append(cmds, "-environment-cd "+Quote(st.Dir))
	}
	for _, kv := range st.Env {
		if !strings.Contains(kv, "=") {
			return nil, fmt.Errorf("environment entry %q is not NAME=VALUE", kv)
		}
		cmds = append(cmds, setenv(kv))
	}
	for _, cmd := range cmds {
		if _, _, err := g.Run(ctx, cmd); err != nil {
			return nil, fmt.Errorf("%s: %w", prog, err)
		}
	}
	b.setState(wire.State{State: wire.StateNotStarted, Reason: "loaded"})
	return b.status()
}

// launch starts gdb with the settings every session needs and the
// program's terminal.
func (b *Backend) launch() (*GDB, error) {
	g, err := Start(b.cfg.Path)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	for _, cmd := range []string{
		"-gdb-set mi-async on", // commands (and halt) work while the program runs
		"-gdb-set confirm off", // kill and friends must not ask
		"-gdb-set width 0",     // no line wrapping in console output
		"-gdb-set height 0",    // no paging
		"-gdb-set print pretty off",
		// A debuginfod lookup per library per rank would stall a large job
		// on the network, or on its absence.
		"-gdb-set debuginfod enabled off",
		// Loads are the backend's to handle, by the dlopen setting
		// (solib.go): gdb reads no library on its own, and stops at each
		// load until the program's start-up libraries have been read.
		"-gdb-set auto-solib-add off",
		"-gdb-set stop-on-solib-events 1",
	} {
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
		term, err := openTerminal()
		if err != nil {
			g.Kill()
			return nil, err
		}
		b.term = term
		b.out = newOutput(b, term)
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

// program finds the executable the way a shell would: a name with a slash
// is a path (relative to dir), a bare name is looked up in $PATH.
func program(name, dir string) (string, error) {
	if name == "" {
		return "", fmt.Errorf("no program given")
	}
	path := name
	if !strings.Contains(name, "/") {
		found, err := exec.LookPath(name)
		if err != nil {
			return "", fmt.Errorf("program %s: not found in $PATH", name)
		}
		path = found
	} else if !filepath.IsAbs(name) && dir != "" {
		path = filepath.Join(dir, name)
	}
	info, err := os.Stat(path)
	if err != nil {
		return "", fmt.Errorf("program %s: %w", name, err)
	}
	if info.IsDir() || info.Mode()&0o111 == 0 {
		return "", fmt.Errorf("program %s: not an executable file", path)
	}
	return path, nil
}

// resume runs a command that sets the program going; the stop that ends
// it arrives as an event. gdb answers ^running before its *running record
// reaches the watcher: unless gdb has reported something since (the
// running, or even the stop), the state is set to running here, so that a
// status asked right after this answer does not see the old stop. A step
// (step, next, finish) runs as itself from the frame it leaves, which a
// step over a call that waits for other ranks may never get back to.
func (b *Backend) resume(g *GDB, run func(string) (Record, string, error), cmd string) ([]byte, error) {
	name := strings.TrimPrefix(strings.Fields(cmd)[0], "-exec-")
	step := name != "continue" && name != "run"
	if err := b.beforeResume(g, step); err != nil {
		return nil, err
	}
	running := wire.State{State: wire.StateRunning}
	if step {
		running.Reason, running.Frame = name, b.stepFrom(run, name)
	}
	// A hold at a load ends before the process goes on, since the next
	// load may hold it again before run returns.
	b.mu.Lock()
	reported, held := b.reported, b.held
	b.held, b.going = false, running
	b.mu.Unlock()
	if _, _, err := run(cmd); err != nil {
		b.mu.Lock()
		if b.reported == reported {
			b.held = held
		}
		b.going = wire.State{}
		b.mu.Unlock()
		return nil, err
	}
	b.mu.Lock()
	if b.reported == reported {
		b.state = running
	}
	b.mu.Unlock()
	return wire.Encode(running)
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

func breakInsert(run func(string) (Record, string, error), br wire.Break) ([]byte, error) {
	if strings.TrimSpace(br.Location) == "" {
		return nil, fmt.Errorf("break: no location")
	}
	cmd := "-break-insert -f"
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
	if err != nil {
		return nil, err
	}
	return wire.Encode(breakpoint(r.Results.Get("bkpt")))
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

func vars(list Value) []wire.Var {
	out := []wire.Var{}
	for _, v := range list.Items() {
		value := v.S("value")
		if !v.Has("value") {
			value = "{...}" // an aggregate: print it by name to see it
		}
		out = append(out, wire.Var{Name: v.S("name"), Type: v.S("type"), Value: value})
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
func console(run func(string) (Record, string, error), command string) ([]byte, error) {
	_, text, err := run("-interpreter-exec console " + Quote(command))
	if err != nil {
		return nil, err
	}
	return wire.Encode(wire.Text{Text: strings.TrimRight(text, "\n")})
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

// decodeOptional decodes body into v unless body is empty.
func decodeOptional(body []byte, v any) error {
	if len(body) == 0 {
		return nil
	}
	return wire.Decode(body, v)
}
