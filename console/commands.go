package console

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/sdm-hpc/sdm/wire"
)

// command is one console command.
type command struct {
	name    string
	aliases []string
	usage   string
	help    string
	run     func(ctx context.Context, c *Console, ranks wire.RankSet, args []string) error
}

var commands []*command

func init() {
	commands = []*command{
		{name: "status", usage: "[SET] status", help: "what each rank's process is doing",
			run: simple(wire.OpStatus)},
		{name: "where", aliases: []string{"bt"}, usage: "[SET] where", help: "the call stack of each rank, merged",
			run: simple(wire.OpWhere)},
		{name: "stacks", usage: "[SET] stacks", help: "all call stacks as one tree: where the ranks' paths part",
			run: runStacks},
		{name: "continue", aliases: []string{"c"}, usage: "[SET] continue", help: "let the processes run",
			run: control(wire.OpRun)},
		{name: "halt", usage: "[SET] halt", help: "stop running processes",
			run: control(wire.OpHalt)},
		{name: "kill", usage: "[SET] kill", help: "kill the processes",
			run: control(wire.OpKill)},
		{name: "focus", usage: "focus SET", help: "make SET the ranks that commands without [SET] go to",
			run: runFocus},
		{name: "help", usage: "help [COMMAND]", help: "list the commands, or explain one",
			run: runHelp},
		{name: "quit", aliases: []string{"q", "exit"}, usage: "quit", help: "end the session and the job",
			run: func(context.Context, *Console, wire.RankSet, []string) error { return ErrQuit }},
	}
}

func lookup(name string) (*command, bool) {
	for _, cmd := range commands {
		if cmd.name == name {
			return cmd, true
		}
		for _, a := range cmd.aliases {
			if a == name {
				return cmd, true
			}
		}
	}
	return nil, false
}

// simple is a command that sends op without arguments.
func simple(op string) func(context.Context, *Console, wire.RankSet, []string) error {
	return func(ctx context.Context, c *Console, ranks wire.RankSet, args []string) error {
		if len(args) > 0 {
			return fmt.Errorf("%s takes no arguments", op)
		}
		_, err := c.send(ctx, ranks, op, nil)
		return err
	}
}

// control is a command that changes what the processes do. Its answers are
// printed only where they failed: the change itself is reported by the
// events it causes (running, stopped, exited), once.
func control(op string) func(context.Context, *Console, wire.RankSet, []string) error {
	return func(ctx context.Context, c *Console, ranks wire.RankSet, args []string) error {
		if len(args) > 0 {
			return fmt.Errorf("%s takes no arguments", op)
		}
		groups, err := c.s.Command(ctx, ranks, op, nil, c.opts.Timeout)
		for _, g := range groups {
			if g.Status != wire.StatusOK {
				c.printReply(op, g)
			}
		}
		return err
	}
}

func runFocus(_ context.Context, c *Console, _ wire.RankSet, args []string) error {
	if len(args) == 0 {
		return fmt.Errorf("focus needs a rank set, such as focus 0-3,7 or focus all")
	}
	ranks, err := c.parseSet(strings.Join(args, ""))
	if err != nil {
		return err
	}
	c.focus = ranks
	c.note("focus", ranks)
	return nil
}

func runHelp(_ context.Context, c *Console, _ wire.RankSet, args []string) error {
	if len(args) > 0 {
		cmd, ok := lookup(args[0])
		if !ok {
			return fmt.Errorf("unknown command %q", args[0])
		}
		c.println(cmd.usage + "\n    " + cmd.help)
		return nil
	}
	var lines []string
	for _, cmd := range commands {
		lines = append(lines, fmt.Sprintf("  %-18s %s", cmd.usage, cmd.help))
	}
	sort.Strings(lines)
	c.println("Commands (SET is a rank set such as 0-3,7 or all; without it the focus set is used):\n" + strings.Join(lines, "\n"))
	return nil
}
