package gdbmi

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/sdm-hpc/sdm/mpiq"
	"github.com/sdm-hpc/sdm/wire"
)

// The ops that show the program as gdb's CLI does for someone at its
// prompt: bt, up and down, list, the values of displays, and the info
// subcommands that have no MI form.

// Backtrace implements backend.Ops: the frames of -stack-list-frames and
// their arguments (simple values, as bt prints them), and with Full each
// frame's locals, read with the frame selected in turn; the frame the user
// selected is selected again after.
func (b *Backend) Backtrace(ctx context.Context, bt wire.Backtrace) (wire.Trace, error) {
	var tr wire.Trace
	err := b.look(ctx, wire.OpBacktrace, func(run func(string) (Record, string, error)) error {
		var err error
		tr, err = b.backtrace(run, bt)
		return err
	})
	return tr, err
}

// scalars shows an argument of aggregate type as "...", as gdb's bt does
// (print frame-arguments scalars).
func scalars(args []wire.Var) []wire.Var {
	for i, a := range args {
		if a.Value == "" || aggregate(a.Value) {
			args[i].Value = "..."
		}
	}
	return args
}

// aggregate tells a value of an aggregate as gdb prints it: a struct,
// union or array in braces, a Fortran array or derived type in
// parentheses ("(1, 2, 3)", where a complex number is "(1,2)"), a
// pretty-printed container with its elements ("std::vector of length 3,
// capacity 3 = {…}"); a pointer or string never is.
func aggregate(v string) bool {
	switch {
	case strings.HasPrefix(v, "{"):
		return true
	case strings.HasPrefix(v, "0x"), strings.HasPrefix(v, `"`), strings.HasPrefix(v, "'"):
		return false
	case strings.HasPrefix(v, "("):
		return strings.Contains(v, ", ") || strings.Contains(v, " = ")
	}
	return strings.Contains(v, " = {")
}

// backtrace lists the frames bt asks for, with their arguments (and
// locals, for bt full).
func (b *Backend) backtrace(run func(string) (Record, string, error), bt wire.Backtrace) (wire.Trace, error) {
	span := ""
	more := func(int) bool { return false }
	switch {
	case bt.Limit > 0:
		// One frame past the limit tells whether there are more.
		span = fmt.Sprintf(" 0 %d", bt.Limit)
		more = func(n int) bool { return n > bt.Limit }
	case bt.Limit < 0:
		r, _, err := run("-stack-info-depth")
		if err != nil {
			return wire.Trace{}, err
		}
		depth := r.Results.Int("depth")
		span = fmt.Sprintf(" %d %d", max(depth+bt.Limit, 0), depth-1)
	}
	r, _, err := run("-stack-list-frames" + span)
	if err != nil {
		return wire.Trace{}, err
	}
	var tr wire.Trace
	items := r.Results.Get("stack").Items()
	if more(len(items)) {
		items, tr.More = items[:bt.Limit], true
	}
	for _, v := range items {
		// The interposition library's frames are left out (mpiq.Unwrap);
		// the others keep gdb's numbers, which frame N takes.
		if f := frame(v); v.Int("level") == 0 || !mpiq.Wrapper(f.From) {
			tr.Levels = append(tr.Levels, wire.Level{Level: v.Int("level"), Frame: f})
		}
	}
	if len(tr.Levels) == 0 {
		return tr, nil
	}
	low, high := tr.Levels[0].Level, tr.Levels[len(tr.Levels)-1].Level
	// The arguments come without their types: gdb prints a type by first
	// looking its name up in the whole program, which expands a library's
	// debug information anew for each inferior (0.13 s a rank for a frame
	// in libc with its debug symbols, paid again on every rank of a shared
	// gdb), where their values alone cost nothing.
	r, _, err = run(fmt.Sprintf("-stack-list-arguments --all-values %d %d", low, high))
	if err != nil {
		return wire.Trace{}, err
	}
	// By level: the levels left out (mpiq.Wrapper) have arguments too.
	at := make(map[int]int, len(tr.Levels))
	for i, l := range tr.Levels {
		at[l.Level] = i
	}
	for _, v := range r.Results.Get("stack-args").Items() {
		if i, ok := at[v.Int("level")]; ok {
			tr.Levels[i].Args = scalars(vars(v.Get("args"), v.Get("args")))
		}
	}
	if bt.Full {
		err = b.frameLocals(run, tr.Levels)
	}
	return tr, err
}

// frameLocals reads the locals of each level, then selects again the frame
// that was selected.
func (b *Backend) frameLocals(run func(string) (Record, string, error), levels []wire.Level) error {
	r, _, err := run("-stack-info-frame")
	if err != nil {
		return err
	}
	selected := r.Results.Get("frame").Int("level")
	for i := range levels {
		if _, _, err := run("-stack-select-frame " + strconv.Itoa(levels[i].Level)); err != nil {
			return err
		}
		r, _, err := run("-stack-list-locals --all-values")
		if err != nil {
			return err
		}
		levels[i].Locals = vars(r.Results.Get("locals"), r.Results.Get("locals"))
	}
	_, _, err = run("-stack-select-frame " + strconv.Itoa(selected))
	return err
}

// Up implements backend.Ops with the CLI's up, down and frame, which keep
// gdb's own limits and words ("Initial frame selected; you cannot go
// up.") and set the lines that list shows next.
func (b *Backend) Up(ctx context.Context, n wire.Count) (wire.Level, error) {
	_, run, err := b.session(ctx, wire.OpUp)
	if err != nil {
		return wire.Level{}, err
	}
	// One level is up or down without a count, as typed alone: gdb then
	// refuses to go past the end instead of stopping there silently.
	cmd := "frame"
	switch {
	case n.N == 1:
		cmd = "up"
	case n.N == -1:
		cmd = "down"
	case n.N > 0:
		cmd = "up " + strconv.Itoa(n.N)
	case n.N < 0:
		cmd = "down " + strconv.Itoa(-n.N)
	}
	out, err := console(run, cmd)
	if err != nil {
		return wire.Level{}, err
	}
	r, _, err := run("-stack-info-frame")
	if err != nil {
		return wire.Level{}, err
	}
	v := r.Results.Get("frame")
	// A frame of the queue library's wrappers, which backtraces leave out
	// (mpiq.Unwrap), is passed over in the same direction.
	for step := "up"; v.Int("level") > 0 && mpiq.Wrapper(frame(v).From); {
		if n.N < 0 {
			step = "down"
		}
		if out, err = console(run, step); err != nil {
			return wire.Level{}, err
		}
		if r, _, err = run("-stack-info-frame"); err != nil {
			return wire.Level{}, err
		}
		v = r.Results.Get("frame")
	}
	return wire.Level{Level: v.Int("level"), Frame: frame(v), Source: sourceText(out.Text)}, nil
}

// numberedLine is a line of source as the CLI prints it: its number, a
// tab, its text.
var numberedLine = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^\d+\t(.*)$`) })

// sourceText picks the text of the source line out of what the CLI's
// frame commands print after the frame.
func sourceText(out string) string {
	for _, line := range strings.Split(out, "\n") {
		if m := numberedLine().FindStringSubmatch(line); m != nil {
			return m[1]
		}
	}
	return ""
}

// List implements backend.Ops: the CLI's list, whose place gdb keeps, so
// that a second list goes on where the first ended.
func (b *Backend) List(ctx context.Context, where wire.Text) (wire.Text, error) {
	return b.console(ctx, wire.OpList, strings.TrimSpace("list "+where.Text))
}

// Evaluate implements backend.Ops: each expression as print evaluates it;
// one that fails gives its reason and the others still their values.
func (b *Backend) Evaluate(ctx context.Context, e wire.Exprs) ([]wire.Value, error) {
	values := make([]wire.Value, len(e.Exprs))
	for i, x := range e.Exprs {
		v, err := b.Print(ctx, wire.Expr{Expr: x})
		if err != nil {
			if ctx.Err() != nil {
				return nil, err
			}
			values[i].Error, values[i].Absent = err.Error(), errors.Is(err, ErrNoSymbol)
			continue
		}
		values[i].Value = v.Text
	}
	return values, nil
}

// FrameInfo implements backend.Ops.
func (b *Backend) FrameInfo(ctx context.Context) (wire.Text, error) {
	return b.console(ctx, wire.OpFrameInfo, "info frame")
}

// Registers implements backend.Ops.
func (b *Backend) Registers(ctx context.Context, names wire.Text) (wire.Text, error) {
	return b.console(ctx, wire.OpRegisters, strings.TrimSpace("info registers "+names.Text))
}

// Libraries implements backend.Ops.
func (b *Backend) Libraries(ctx context.Context) (wire.Text, error) {
	return b.console(ctx, wire.OpLibraries, "info sharedlibrary")
}

// Symbols implements backend.Ops: the functions and source files with
// debug information, for the console's completion (asked of one rank).
func (b *Backend) Symbols(ctx context.Context) (wire.Symbols, error) {
	_, run, err := b.session(ctx, wire.OpSymbols)
	if err != nil {
		return wire.Symbols{}, err
	}
	var s wire.Symbols
	seen := map[string]bool{}
	add := func(list *[]string, name string) {
		if name != "" && !seen[name] {
			seen[name] = true
			*list = append(*list, name)
		}
	}
	r, _, err := run("-symbol-info-functions")
	if err != nil {
		return wire.Symbols{}, err
	}
	for _, file := range r.Results.Get("symbols").Get("debug").Items() {
		for _, sym := range file.Get("symbols").Items() {
			add(&s.Functions, sym.S("name"))
		}
	}
	r, _, err = run("-file-list-exec-source-files")
	if err != nil {
		return wire.Symbols{}, err
	}
	for _, f := range r.Results.Get("files").Items() {
		add(&s.Files, filepath.Base(f.S("file")))
	}
	slices.Sort(s.Functions)
	slices.Sort(s.Files)
	return s, nil
}

// Sample implements backend.Ops: one sample, gdb's stack of the stopped
// process (a running one is under gdb's ptrace, which no other tracer can
// share).
func (b *Backend) Sample(ctx context.Context, _ wire.Sample) (wire.CallTree, error) {
	st, err := b.Where(ctx)
	if err != nil {
		return wire.CallTree{}, err
	}
	t := wire.CallTree{Samples: 1}
	t.AddStack(b.cfg.Rank, st.Frames)
	t.Sort()
	return t, nil
}

// Queues implements backend.Ops: what the program's MPI operations in
// flight are, read beside gdb (package mpiq).
func (b *Backend) Queues(ctx context.Context) (wire.Queues, error) {
	return mpiq.Of(ctx, b.PID(), b.cfg.Rank)
}
