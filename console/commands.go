package console

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/sdm-hpc/sdm/op"
	"github.com/sdm-hpc/sdm/wire"
)

// command is one console command. run gets the rank set the command goes
// to and the rest of the line after the command's name.
type command struct {
	name    string
	aliases []string
	usage   string
	help    string
	more    string // what help COMMAND adds to help
	run     func(ctx context.Context, c *Console, ranks wire.RankSet, args string) error
}

var commands []*command

func init() {
	commands = []*command{
		// Running.
		{name: "run", aliases: []string{"r"}, usage: "run",
			help: "start the loaded program on every rank of the set (once per job under mpirun, mpiexec, srun or poe: then restart)",
			run:  runRun},
		{name: "restart", usage: "restart",
			help: "end the whole job and start it again through its launcher, keeping breakpoints, dlopen settings, rank sets and focus, and run it (then wait)",
			more: restartHelp, run: runRestart},
		{name: "continue", aliases: []string{"c", "cont"}, usage: "continue", help: "let stopped processes run",
			run: control(wire.OpCont)},
		{name: "next", aliases: []string{"n"}, usage: "next [N]", help: "run to the next line, over calls (N times)",
			run: counted(wire.OpNext)},
		{name: "step", aliases: []string{"s"}, usage: "step [N]", help: "run to the next line, into calls (N times)",
			run: counted(wire.OpStep)},
		{name: "finish", aliases: []string{"fin"}, usage: "finish", help: "run until the current function returns, and show the value it returned",
			run: func(ctx context.Context, c *Console, ranks wire.RankSet, args string) error {
				if args != "" {
					return usageError("finish takes no arguments")
				}
				return c.sendAndWait(ctx, ranks, wire.OpFinish, nil)
			}},
		{name: "halt", aliases: []string{"interrupt"}, usage: "halt", help: "stop running processes",
			run: control(wire.OpHalt)},
		{name: "kill", usage: "kill", help: "kill the processes",
			run: control(wire.OpKill)},
		{name: "detach", usage: "detach", help: "let attached processes go on without the debugger",
			run: simple(wire.OpDetach, noArgs)},
		{name: "wait", usage: "wait [any] [SECONDS]",
			help: "wait until no process of the set runs (any: until one stops, exits or is lost); say which still run",
			more: waitHelp, run: runWait},
		{name: "status", usage: "status", help: "what each process is doing",
			run: simple(wire.OpStatus, noArgs)},

		// Breakpoints.
		{name: "break", aliases: []string{"b"}, usage: "break LOCATION [if COND]",
			help: "stop at a function, FILE:LINE or *ADDRESS; pending until its library is read (help set)",
			run:  breakCmd(false)},
		{name: "tbreak", usage: "tbreak LOCATION [if COND]", help: "a breakpoint that is deleted when hit",
			run: breakCmd(true)},
		{name: "trace", usage: "trace LOCATION[,EXPR...] [if COND]",
			help: "log EXPRs each time a rank passes LOCATION, which does not stop it: each pass is told (trace N, pass P: EXPR = VALUE)",
			run:  simple(wire.OpBreak, traceCmd)},
		{name: "watch", usage: "watch EXPR", help: "stop when EXPR is written",
			run: watchCmd("write")},
		{name: "rwatch", usage: "rwatch EXPR", help: "stop when EXPR is read",
			run: watchCmd("read")},
		{name: "awatch", usage: "awatch EXPR", help: "stop when EXPR is read or written",
			run: watchCmd("access")},
		{name: "delete", aliases: []string{"d"}, usage: "delete [N...]",
			help: "delete breakpoints (none given: all, after a question at the terminal)", run: runDelete},
		{name: "enable", usage: "enable N...", help: "enable breakpoints",
			run: idsCmd(wire.OpEnable)},
		{name: "disable", usage: "disable N...", help: "disable breakpoints",
			run: idsCmd(wire.OpDisable)},
		{name: "condition", usage: "condition N [EXPR]", help: "stop at breakpoint N only when EXPR holds (none: always)",
			run: conditionCmd},
		{name: "ignore", usage: "ignore N COUNT", help: "let breakpoint N pass COUNT times",
			run: ignoreCmd},
		{name: "breakpoints", aliases: []string{"info-breakpoints"}, usage: "breakpoints", help: "list breakpoints and watchpoints",
			run: simple(wire.OpBreakList, noArgs)},

		// Looking around.
		{name: "where", aliases: []string{"bt", "backtrace"}, usage: "where [full] [N]",
			help: "numbered frames with their arguments, as gdb's bt (N: the innermost N, -N the outermost; full: with locals); ranks merge where they agree",
			run:  runBacktrace},
		{name: "up", usage: "up [N]", help: "select the frame N levels up (towards main), in each rank",
			run: moveFrame(1)},
		{name: "down", usage: "down [N]", help: "select the frame N levels down (towards the innermost), in each rank",
			run: moveFrame(-1)},
		{name: "list", aliases: []string{"l"}, usage: "list [FUNC|FILE:N|N|-]",
			help: "source lines (around the selected frame's line at first; again: the next lines); ranks at the same place share one listing",
			run:  simple(wire.OpList, textArgs)},
		{name: "info", aliases: []string{"i"}, usage: "info SUBCOMMAND",
			help: "gdb's info: locals, args, breakpoints, threads, frame, registers, sharedlibrary, signals, display, stack",
			more: infoHelp(), run: runInfo},
		{name: "display", usage: "display [EXPR]",
			help: "show EXPR at every stop of the set's ranks, merged by value (alone: show them all now)", run: runDisplay},
		{name: "undisplay", usage: "undisplay [N...]", help: "stop showing displays N (none given: all)",
			run: runUndisplay},
		{name: "stacks", usage: stacksUsage,
			help: "all call stacks as one tree, the classes of ranks whose stacks agree, which ranks move between samples, and one rank per class to look at",
			more: stacksHelp, run: runStacks},
		{name: "queues", usage: queuesUsage,
			help: "each rank's MPI operations in flight (sends, receives, collectives, waits), merged over ranks, the longest waits first",
			more: queuesHelp, run: runQueues},
		{name: "deadlock", usage: deadlockUsage,
			help: "why the job hangs, from the stacks: which MPI call each rank waits in, the ranks outside MPI that the waits lead to, collectives that do not match",
			more: deadlockHelp, run: runDeadlock},
		{name: "frame", aliases: []string{"f"}, usage: "frame [N]", help: "select stack frame N (0 is the innermost); alone, show the selected one",
			run: runFrame},
		{name: "depth", usage: "depth", help: "how many frames the stack has",
			run: simple(wire.OpDepth, noArgs)},
		{name: "print", aliases: []string{"p"}, usage: "print EXPR", help: "the value of EXPR; ranks group by value",
			run: printCmd},
		{name: "compare", usage: compareUsage,
			help: "EXPR over the ranks as statistics: least and most with their ranks, mean, sd, NaN, outliers, a histogram; arrays element by element; other values by value",
			run:  runCompare},
		{name: "ptype", usage: "ptype EXPR", help: "the type of EXPR",
			run: exprCmd(wire.OpPtype)},
		{name: "locals", usage: "locals", help: "the local variables of the selected frame, merged one variable at a time",
			run: simple(wire.OpLocals, noArgs)},
		{name: "args", usage: "args", help: "the arguments of the selected frame, merged one variable at a time",
			run: simple(wire.OpArgs, noArgs)},
		{name: "globals", usage: "globals", help: "the global variables of the program's own sources",
			run: simple(wire.OpGlobals, noArgs)},
		{name: "threads", usage: "threads", help: "the threads of each process",
			run: simple(wire.OpThreads, noArgs)},
		{name: "thread", usage: "thread N", help: "select thread N",
			run: numberCmd(wire.OpThread, "thread id")},
		{name: "x", usage: "x ADDRESS [COUNT]", help: "COUNT bytes of memory (16 by default) at ADDRESS, an expression",
			run: memReadCmd},
		{name: "poke", usage: "poke ADDRESS HEXBYTES", help: "write bytes (hex digits, such as 2a000000) at ADDRESS",
			run: memWriteCmd},
		{name: "signals", usage: "signals", help: "how gdb handles each signal",
			run: simple(wire.OpSignals, noArgs)},
		{name: "handle", usage: "handle SIGNAL ACTIONS", help: "change how a signal is handled (stop, nostop, print, noprint, pass, nopass)",
			run: textCmd(wire.OpHandle, "handle needs a signal and actions, such as handle SIGUSR1 nostop noprint")},
		{name: "gdb", usage: "gdb COMMAND", help: "run a gdb command (CLI, or MI when it starts with -) as it is",
			run: textCmd(wire.OpRaw, "gdb needs a command, such as gdb info registers rip")},

		// Settings.
		{name: "set", usage: "set dlopen MODE [GLOBS]",
			help: "what library loads do (auto, slow, medium, fast), from the next one on; set verbose loads on|off prints them (help set)",
			more: setHelp, run: runSet},
		{name: "show", usage: "show dlopen|verbose loads", help: "the dlopen mode and match list of each rank, or whether loads are printed",
			run: runShow},

		// The console itself.
		{name: "focus", usage: "focus [SET]", help: "make SET the ranks that commands without [SET] go to (alone: show the focus, as a command that sets it)",
			run: runFocus},
		{name: "defset", usage: "defset NAME SET", help: "name a rank set, for [NAME] and focus NAME (defset workers 1-63)",
			run: runDefset},
		{name: "undefset", usage: "undefset NAME", help: "forget a named rank set",
			run: runUndefset},
		{name: "sets", usage: "sets", help: "the named rank sets and the focus",
			run: runSets},
		{name: "listen", usage: "listen on|off|wait N", help: "take on every job that asks to be debugged (sdm connect) while this session runs, each as its own rank set jobN (off stops; wait N waits until the session holds N jobs)",
			run: runListen},
		{name: "help", aliases: []string{"h"}, usage: "help [COMMAND]", help: "list the commands, or explain one",
			run: runHelp},
		{name: "quit", aliases: []string{"q", "exit"}, usage: "quit", help: "end the session and the job",
			run: func(context.Context, *Console, wire.RankSet, string) error { return ErrQuit }},
	}
}

// waitHelp is what help wait adds: how a wait ends, for steps too.
const waitHelp = `    SECONDS (default: --timeout) bounds the wait. When it runs out, the ranks that
    still run are listed, "[1-3] still running after 30s", and the next command
    runs (halt, then wait and stacks, shows where they are); a script's exit
    status is then 1. wait any lists the ranks still running when it returns.
    step, next and finish wait the same way; one that does not come back says
    where it began: "[2] still running next from pass at ring.c:12 after 30s: a
    call there may wait for other ranks (continue them, or halt)".
    ^C stops a wait and leaves the ranks running ("interrupted: [2-3] still
    running"); ^C at the prompt then halts them, as in gdb.`

// queuesHelp is what help queues adds: where the operations come from.
const queuesHelp = `    sdm debug preloads a library of its own into the ranks it launches
    (unless --queues=false) that keeps each MPI call in flight where the
    rank's server reads it without stopping the rank: the call, its peer
    and root as world ranks, tag, communicator, size, and how long it has
    waited. A peer that differs from rank to rank by the same offset reads
    rank+1 (a ring). A job sdm attached to has none.`

// deadlockHelp is what help deadlock adds: what stacks can and cannot
// tell.
const deadlockHelp = `    Samples the ranks as stacks does (--samples 2 or more tells which ranks
    move) and reads each main thread's outermost MPI call: a collective, a
    point-to-point call (send, receive, probe) or a wait on requests. Says,
    likeliest cause last: ranks outside MPI while others wait (the root of a
    hang, usually), collectives that do not match, or every rank blocked in
    point-to-point calls (a cycle). Stacks do not hold peers, tags or
    communicators: launched by sdm debug, the ranks keep their MPI calls in
    flight, and deadlock builds the graph of who waits for whom from them:
    the cycles, the ranks behind them, the ranks outside MPI that others wait
    for, receives whose peer sends another tag. --dot FILE writes that graph
    in Graphviz's language (ranks whose calls read alike are one node), --svg
    FILE draws it.`

// stacksHelp is what help stacks adds: sampling, classes, progress.
const stacksHelp = `    --samples K takes K samples of every rank's stacks, --interval D apart
    (default 1 sample, 100ms apart); the tree holds every path seen. Ranks whose
    whole stacks agree form a class (the callers line for line, the innermost
    frame by its function: its line is where the pc happened to be); classes
    print biggest first, those smaller than the mean marked "<- outlier". With
    2 or more samples, the ranks whose stacks changed so between samples moved;
    the others may hang. The last line
    names one rank per class: a rank set for where, or, for a job attached
    through its starter (sdm stacks --pid), the sdm attach --ranks command that
    takes gdb to those ranks only. --dot FILE writes the tree in Graphviz's
    language, --svg FILE draws it (with Graphviz's dot).`

// ErrUsage is wrapped by errors about how a command was typed.
var ErrUsage = errors.New("usage")

// usageErr is a mistake in a command line; it matches ErrUsage.
type usageErr struct{ msg string }

func (e *usageErr) Error() string        { return e.msg }
func (e *usageErr) Is(target error) bool { return target == ErrUsage }

func usageError(format string, args ...any) error {
	return &usageErr{fmt.Sprintf(format, args...)}
}

// noArgs checks that a command got no arguments.
func noArgs(name, args string) ([]byte, error) {
	if args != "" {
		return nil, usageError("%s takes no arguments", name)
	}
	return nil, nil
}

// simple sends op with the body that parse makes of the arguments, and
// prints every answer.
func simple(op string, parse func(name, args string) ([]byte, error)) func(context.Context, *Console, wire.RankSet, string) error {
	return func(ctx context.Context, c *Console, ranks wire.RankSet, args string) error {
		body, err := parse(op, args)
		if err != nil {
			return err
		}
		_, err = c.send(ctx, ranks, op, body)
		return err
	}
}

// control is a command that changes what the processes do. Its answers are
// printed only where they failed: the change itself is reported by the
// events it causes (running, stopped, exited), once.
func control(op string) func(context.Context, *Console, wire.RankSet, string) error {
	return func(ctx context.Context, c *Console, ranks wire.RankSet, args string) error {
		if args != "" {
			return usageError("%s takes no arguments", op)
		}
		return c.sendQuiet(ctx, ranks, op, nil)
	}
}

// counted is step or next: like gdb's, they return once the ranks have
// stopped again, so that the next command sees where they went.
func counted(op string) func(context.Context, *Console, wire.RankSet, string) error {
	return func(ctx context.Context, c *Console, ranks wire.RankSet, args string) error {
		n := 1
		if args != "" {
			var err error
			if n, err = strconv.Atoi(args); err != nil || n < 1 {
				return usageError("%s [N]: %q is not a positive count", op, args)
			}
		}
		return c.sendAndWait(ctx, ranks, op, wire.MustEncode(wire.Count{N: n}))
	}
}

func numberCmd(op, what string) func(context.Context, *Console, wire.RankSet, string) error {
	return simple(op, func(name, args string) ([]byte, error) {
		n, err := strconv.Atoi(args)
		if err != nil || n < 0 {
			return nil, usageError("%s needs a %s, such as %s 1", name, what, name)
		}
		return wire.Encode(wire.Count{N: n})
	})
}

func exprCmd(op string) func(context.Context, *Console, wire.RankSet, string) error {
	return simple(op, func(name, args string) ([]byte, error) {
		if args == "" {
			return nil, usageError("%s needs an expression", name)
		}
		return wire.Encode(wire.Expr{Expr: args})
	})
}

// printCmd shows each value after the expression it is of.
func printCmd(ctx context.Context, c *Console, ranks wire.RankSet, args string) error {
	if args == "" {
		return usageError("print needs an expression")
	}
	_, err := c.sendLabelled(ctx, ranks, wire.OpPrint, op.Print.Body(wire.Expr{Expr: args}), args)
	return err
}

func textCmd(op, missing string) func(context.Context, *Console, wire.RankSet, string) error {
	return simple(op, func(name, args string) ([]byte, error) {
		if args == "" {
			return nil, usageError("%s", missing)
		}
		return wire.Encode(wire.Text{Text: args})
	})
}

func breakCmd(temporary bool) func(context.Context, *Console, wire.RankSet, string) error {
	return simple(wire.OpBreak, func(name, args string) ([]byte, error) {
		loc, cond, _ := strings.Cut(args, " if ")
		loc, cond = strings.TrimSpace(loc), strings.TrimSpace(cond)
		if loc == "" || strings.HasPrefix(args, "if ") {
			return nil, usageError("break needs a location: a function, FILE:LINE or *ADDRESS")
		}
		return wire.Encode(wire.Break{Location: loc, Condition: cond, Temporary: temporary})
	})
}

func watchCmd(mode string) func(context.Context, *Console, wire.RankSet, string) error {
	return simple(wire.OpWatch, func(name, args string) ([]byte, error) {
		if args == "" {
			return nil, usageError("watch needs an expression")
		}
		return wire.Encode(wire.Watch{Expr: args, Mode: mode})
	})
}

func idsCmd(op string) func(context.Context, *Console, wire.RankSet, string) error {
	return func(ctx context.Context, c *Console, ranks wire.RankSet, args string) error {
		var ids []int
		for _, f := range strings.Fields(args) {
			id, err := strconv.Atoi(f)
			if err != nil || id < 1 {
				return usageError("%s: %q is not a breakpoint number", op, f)
			}
			ids = append(ids, id)
		}
		if len(ids) == 0 {
			return usageError("%s needs breakpoint numbers", op)
		}
		return c.sendQuiet(ctx, ranks, op, wire.MustEncode(wire.IDs{IDs: ids}))
	}
}

func conditionCmd(ctx context.Context, c *Console, ranks wire.RankSet, args string) error {
	idText, expr, _ := strings.Cut(args, " ")
	id, err := strconv.Atoi(idText)
	if err != nil || id < 1 {
		return usageError("condition needs a breakpoint number, then an expression")
	}
	return c.sendQuiet(ctx, ranks, wire.OpCondition, wire.MustEncode(wire.Condition{ID: id, Expr: strings.TrimSpace(expr)}))
}

func ignoreCmd(ctx context.Context, c *Console, ranks wire.RankSet, args string) error {
	f := strings.Fields(args)
	var id, count int
	var err1, err2 error
	if len(f) == 2 {
		id, err1 = strconv.Atoi(f[0])
		count, err2 = strconv.Atoi(f[1])
	}
	if len(f) != 2 || err1 != nil || err2 != nil || id < 1 || count < 0 {
		return usageError("ignore needs a breakpoint number and a count")
	}
	return c.sendQuiet(ctx, ranks, wire.OpIgnore, wire.MustEncode(wire.Ignore{ID: id, Count: count}))
}

func memReadCmd(ctx context.Context, c *Console, ranks wire.RankSet, args string) error {
	f := strings.Fields(args)
	if len(f) == 0 || len(f) > 2 {
		return usageError("x needs an address and, optionally, a byte count")
	}
	count := 16
	if len(f) == 2 {
		var err error
		if count, err = strconv.Atoi(f[1]); err != nil || count < 1 || count > 65536 {
			return usageError("x: count %q is not 1-65536", f[1])
		}
	}
	_, err := c.send(ctx, ranks, wire.OpMemRead, wire.MustEncode(wire.Memory{Addr: f[0], Count: count}))
	return err
}

func memWriteCmd(ctx context.Context, c *Console, ranks wire.RankSet, args string) error {
	f := strings.Fields(args)
	if len(f) != 2 {
		return usageError("poke needs an address and hex bytes, such as poke &x 2a000000")
	}
	return c.sendQuiet(ctx, ranks, wire.OpMemSet, wire.MustEncode(wire.Memory{Addr: f[0], Hex: f[1]}))
}

func runListen(ctx context.Context, c *Console, _ wire.RankSet, args string) error {
	f := strings.Fields(args)
	n := 0
	switch {
	case len(f) == 1 && (f[0] == "on" || f[0] == "off"):
	case len(f) == 2 && f[0] == "wait":
		var err error
		if n, err = strconv.Atoi(f[1]); err != nil || n < 1 {
			return usageError("listen wait needs a number of jobs, 1 or more")
		}
	default:
		return usageError("listen needs on, off, or wait N")
	}
	if c.opts.Jobs == nil {
		return usageError("listen works in sessions of sdm listen, which takes on jobs that wait in sdm connect")
	}
	if n > 0 {
		ctx, cancel := context.WithTimeout(ctx, c.opts.Timeout)
		defer cancel()
		if err := c.opts.Jobs.Wait(ctx, n); err != nil {
			return fmt.Errorf("listen wait %d: %w", n, err)
		}
		return nil
	}
	if err := c.opts.Jobs.Listen(f[0] == "on"); err != nil {
		return err
	}
	c.println("listening for new jobs: " + f[0])
	return nil
}

func runFocus(_ context.Context, c *Console, _ wire.RankSet, args string) error {
	if args == "" {
		// As a command that sets it again.
		if c.opts.JSON {
			c.note("focus", c.focus)
		} else {
			c.println("focus " + c.focus.String())
		}
		return nil
	}
	ranks, err := c.parseSet(strings.TrimSuffix(strings.TrimPrefix(args, "["), "]"))
	if err != nil {
		return err
	}
	c.focus = ranks
	c.note("focus", ranks)
	return nil
}

func runHelp(_ context.Context, c *Console, _ wire.RankSet, args string) error {
	if args != "" {
		cmd, err := lookup(args)
		if err != nil {
			return err
		}
		text := "[SET] " + cmd.usage + "\n    " + cmd.help
		if cmd.more != "" {
			text += "\n" + cmd.more
		}
		if len(cmd.aliases) > 0 {
			text += "\n    also: " + strings.Join(cmd.aliases, ", ")
		}
		c.println(text)
		return nil
	}
	var lines []string
	for _, cmd := range commands {
		lines = append(lines, fmt.Sprintf("  %-26s %s%s", cmd.usage, cmd.help, aliasText(cmd)))
	}
	sort.Strings(lines)
	c.println("Every command may start with a rank set, such as [0-3,7] or [all]; without one it goes\n" +
		"to the focus set (focus SET). Answers print once per distinct value, ranks first.\n" +
		"A command may be cut short where that leaves one it could be, as in gdb (cont, disp).\n" +
		"^C at the prompt halts the ranks of the focus set that run; during a command it stops waiting.\n" +
		strings.Join(lines, "\n"))
	return nil
}

// Reference is every command as help COMMAND explains it, in Markdown,
// in the order of the table: the command reference's console part.
func Reference() string {
	var b strings.Builder
	for _, cmd := range commands {
		fmt.Fprintf(&b, "### %s\n\n`[SET] %s`: %s", cmd.name, cmd.usage, cmd.help)
		if len(cmd.aliases) > 0 {
			fmt.Fprintf(&b, " (also: `%s`)", strings.Join(cmd.aliases, "`, `"))
		}
		b.WriteString("\n\n")
		if cmd.more != "" {
			fmt.Fprintf(&b, "```\n%s\n```\n\n", strings.TrimRight(cmd.more, "\n"))
		}
	}
	return b.String()
}
