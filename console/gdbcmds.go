package console

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/sdm-hpc/sdm/op"
	"github.com/sdm-hpc/sdm/wire"
)

// The commands gdb users type by reflex: info and its subcommands, bt
// with its count and full, up and down, list, display.

type runFunc = func(ctx context.Context, c *Console, ranks wire.RankSet, args string) error

// infoSub is one subcommand of info.
type infoSub struct {
	name    string
	aliases []string
	help    string
	run     runFunc
}

// infoSubs are info's subcommands; most are commands of sdm's own too.
var infoSubs = []infoSub{
	{name: "args", help: "the arguments of the selected frame (args)", run: simple(wire.OpArgs, noArgs)},
	{name: "breakpoints", aliases: []string{"b", "watchpoints"}, help: "breakpoints and watchpoints (breakpoints)",
		run: simple(wire.OpBreakList, noArgs)},
	{name: "display", help: "the expressions shown at every stop, with their rank sets", run: infoDisplay},
	{name: "frame", aliases: []string{"f"}, help: "gdb's description of the selected frame", run: simple(wire.OpFrameInfo, noArgs)},
	{name: "locals", help: "the local variables of the selected frame (locals)", run: simple(wire.OpLocals, noArgs)},
	{name: "registers", aliases: []string{"r"}, help: "the registers (info registers rip rsp: those only)",
		run: simple(wire.OpRegisters, textArgs)},
	{name: "sharedlibrary", aliases: []string{"dll"}, help: "the shared libraries and whether their symbols are read",
		run: simple(wire.OpLibraries, noArgs)},
	{name: "signals", aliases: []string{"handle"}, help: "how gdb handles each signal (signals)", run: simple(wire.OpSignals, noArgs)},
	{name: "stack", aliases: []string{"s"}, help: "the call stack (bt)", run: runBacktrace},
	{name: "threads", help: "the threads of each process (threads)", run: simple(wire.OpThreads, noArgs)},
}

// infoHelp lists info's subcommands, for info alone and help info.
func infoHelp() string {
	lines := make([]string, len(infoSubs))
	for i, s := range infoSubs {
		name := s.name
		if len(s.aliases) > 0 {
			name += ", " + strings.Join(s.aliases, ", ")
		}
		lines[i] = fmt.Sprintf("    info %-27s %s", name, s.help)
	}
	return "    info SUBCOMMAND, a prefix of one (info b, info reg) or one of these:\n" + strings.Join(lines, "\n")
}

func runInfo(ctx context.Context, c *Console, ranks wire.RankSet, args string) error {
	if args == "" {
		c.println(strings.TrimPrefix(infoHelp(), "    "))
		return nil
	}
	word, rest, _ := strings.Cut(args, " ")
	names := make(map[string]int)
	for i, s := range infoSubs {
		names[s.name] = i
		for _, a := range s.aliases {
			names[a] = i
		}
	}
	i, err := resolve(word, names, "info subcommand", func(i int) string { return infoSubs[i].name })
	if err != nil {
		return err
	}
	return infoSubs[i].run(ctx, c, ranks, strings.TrimSpace(rest))
}

// textArgs passes the arguments as they are, none included.
func textArgs(_, args string) ([]byte, error) { return wire.Encode(wire.Text{Text: args}) }

// runBacktrace is gdb's bt [full] [N]: numbered frames with their
// arguments (and their locals with full), the innermost N (outermost with
// -N). Ranks merge where their stacks and values agree; stacks is the one
// tree of all of them.
func runBacktrace(ctx context.Context, c *Console, ranks wire.RankSet, args string) error {
	var bt wire.Backtrace
	for _, f := range strings.Fields(args) {
		if f == "full" || f == "-full" {
			bt.Full = true
			continue
		}
		n, err := strconv.Atoi(f)
		if err != nil || n == 0 {
			return usageError("bt [full] [N]: %q is neither full nor a number of frames (-N: the outermost)", f)
		}
		bt.Limit = n
	}
	groups, err := c.s.Command(ctx, ranks, wire.OpBacktrace, op.Backtrace.Body(bt), c.opts.Timeout)
	if err != nil {
		return err
	}
	groups, gones := c.goneOf(ctx, wire.OpBacktrace, groups)
	for _, g := range mergeTraces(groups) {
		c.printReply(wire.OpBacktrace, "", g)
	}
	c.printGone(wire.OpBacktrace, gones)
	return nil
}

// mergeTraces merges the answers of ranks whose stacks are the same
// frames and differ only in values (a rank argument, a pointer), so that
// a thousand ranks in one place print one backtrace: a value the merged
// ranks agree on shows as it is, one they do not as "<N values>" (print
// it to see which ranks have which). Failures pass as they came.
func mergeTraces(groups []wire.Group) []wire.Group {
	type merged struct {
		ranks  wire.RankSet
		trace  wire.Trace
		values []map[string]bool // per variable, in order: the values seen
	}
	var out []*merged
	var rest []wire.Group
	for _, g := range groups {
		tr, err := op.Backtrace.DecodeAnswer(g.Body)
		if g.Status != wire.StatusOK || err != nil {
			rest = append(rest, g)
			continue
		}
		var m *merged
		for _, o := range out {
			if sameShape(o.trace, tr) {
				m = o
				break
			}
		}
		if m == nil {
			m = &merged{trace: tr}
			out = append(out, m)
		}
		m.ranks = m.ranks.Union(g.Ranks)
		i := 0
		eachVar(tr, func(v *wire.Var) {
			if i == len(m.values) {
				m.values = append(m.values, map[string]bool{})
			}
			m.values[i][v.Value] = true
			i++
		})
	}
	result := make([]wire.Group, 0, len(out)+len(rest))
	for _, m := range out {
		i := 0
		eachVar(m.trace, func(v *wire.Var) {
			if n := len(m.values[i]); n > 1 {
				v.Value = fmt.Sprintf("<%d values>", n)
			}
			i++
		})
		result = append(result, wire.Group{Ranks: m.ranks, Body: wire.MustEncode(m.trace)})
	}
	return append(result, rest...)
}

// sameShape reports whether two traces are the same frames with the same
// variables, whatever their values.
func sameShape(a, b wire.Trace) bool {
	if a.More != b.More || len(a.Levels) != len(b.Levels) {
		return false
	}
	for i, la := range a.Levels {
		lb := b.Levels[i]
		if la.Level != lb.Level || la.Frame != lb.Frame || !sameNames(la.Args, lb.Args) ||
			!sameNames(la.Locals, lb.Locals) || (la.Locals == nil) != (lb.Locals == nil) {
			return false
		}
	}
	return true
}

func sameNames(a, b []wire.Var) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Name != b[i].Name || a[i].Type != b[i].Type {
			return false
		}
	}
	return true
}

// eachVar calls f on every argument and local of tr, in order.
func eachVar(tr wire.Trace, f func(v *wire.Var)) {
	for _, l := range tr.Levels {
		for i := range l.Args {
			f(&l.Args[i])
		}
		for i := range l.Locals {
			f(&l.Locals[i])
		}
	}
}

// moveFrame is up [N] (sign 1) or down [N] (sign -1).
func moveFrame(sign int) runFunc {
	return func(ctx context.Context, c *Console, ranks wire.RankSet, args string) error {
		n := 1
		if args != "" {
			var err error
			if n, err = strconv.Atoi(args); err != nil || n < 1 {
				return usageError("%q is not a number of frames", args)
			}
		}
		_, err := c.send(ctx, ranks, wire.OpUp, op.Up.Body(wire.Count{N: sign * n}))
		return err
	}
}

// runFrame is frame [N]: frame N selected, then shown as up 0 shows the
// selected one, as gdb's frame does (and list then lists around it).
func runFrame(ctx context.Context, c *Console, ranks wire.RankSet, args string) error {
	if args != "" {
		n, err := strconv.Atoi(args)
		if err != nil || n < 0 {
			return usageError("frame needs a frame level (a number, 0 the innermost), not %q", args)
		}
		if err := c.sendQuiet(ctx, ranks, wire.OpFrame, op.Frame.Body(wire.Count{N: n})); err != nil {
			return err
		}
	}
	_, err := c.send(ctx, ranks, wire.OpUp, op.Up.Body(wire.Count{}))
	return err
}

// runDelete is delete [N...]: with no numbers every breakpoint, after a
// question at the terminal (a script does not ask).
func runDelete(ctx context.Context, c *Console, ranks wire.RankSet, args string) error {
	if what, rest, _ := strings.Cut(args, " "); what == "display" {
		return runUndisplay(ctx, c, ranks, strings.TrimSpace(rest))
	} else if what == "breakpoints" {
		args = strings.TrimSpace(rest)
	}
	if args == "" {
		if !c.confirm(fmt.Sprintf("Delete all breakpoints of [%v]?", ranks)) {
			return nil
		}
		return c.sendQuiet(ctx, ranks, wire.OpDelete, op.Delete.Body(wire.IDs{}))
	}
	return idsCmd(wire.OpDelete)(ctx, c, ranks, args)
}

// confirm asks question at the terminal, where there is one; a script's
// commands go ahead without asking.
func (c *Console) confirm(question string) bool {
	c.mu.Lock()
	ask := c.ask
	c.mu.Unlock()
	return ask == nil || ask(question)
}
