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
	i, err := resolve(word, names, "info subcommand")
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
	_, err := c.send(ctx, ranks, wire.OpBacktrace, op.Backtrace.Body(bt))
	return err
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

// runFrame is frame [N]: without N the selected frame, as up 0 shows it.
func runFrame(ctx context.Context, c *Console, ranks wire.RankSet, args string) error {
	if args == "" {
		_, err := c.send(ctx, ranks, wire.OpUp, op.Up.Body(wire.Count{}))
		return err
	}
	return numberCmd(wire.OpFrame, "frame level")(ctx, c, ranks, args)
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
