package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"strconv"
	"syscall"
	"time"

	"github.com/spf13/pflag"

	"github.com/sdm-hpc/sdm/console"
	"github.com/sdm-hpc/sdm/dlopen"
	"github.com/sdm-hpc/sdm/internal/exit"
	"github.com/sdm-hpc/sdm/launcher"
	"github.com/sdm-hpc/sdm/routing"
	"github.com/sdm-hpc/sdm/server"
)

// sessionFlags are the flags of every command that ends in a session:
// the front end's and those of the job's servers.
type sessionFlags struct {
	fs                      *pflag.FlagSet
	front                   launcher.Front
	job                     launcher.Options
	dlopenMode, dlopenMatch string
}

func addSessionFlags(fs *pflag.FlagSet) *sessionFlags {
	f := addJobFlags(fs)
	c, cmds := &f.front.Console, &f.front.Commands
	fs.StringVar(&cmds.Batch, "batch", "", "run the commands in FILE, one per line, then quit (--batch cmds.txt)")
	fs.StringArrayVarP(&cmds.Exprs, "eval", "e", nil, "run this command, then quit; repeatable, in order (-e 'break main' -e run)")
	fs.Var((*console.ExitStatus)(&c.ProgramStatus), "exit-status", "what sdm's exit status tells: sdm (whether every command and answer went well), or program (the ranks' worst exit status, 128+N for a rank signal N ended, for CI)")
	fs.BoolVar(&c.JSON, "json", false, "print one JSON object per line: one reply per command, and the events (docs/JSON.md)")
	return f
}

// addJobFlags adds the flags of a session's job and its servers, those of
// every command that ends in a session but the console's commands.
func addJobFlags(fs *pflag.FlagSet) *sessionFlags {
	f := &sessionFlags{fs: fs}
	c, o := &f.front.Console, &f.job
	fs.StringVar(&f.dlopenMode, "dlopen-mode", string(dlopen.Default().Mode), "what a library load does: auto (stop only while a breakpoint is pending), slow (stop, report, plant breakpoints), medium (report only --dlopen-match), fast (never stop); see below")
	fs.StringVar(&f.dlopenMatch, "dlopen-match", "", "the colon-separated list of library names whose loads medium and auto mode report, each may end in * (--dlopen-match 'libcuda.so*:libmine.so')")
	fs.IntVar(&o.Fanout, "fanout", 0, "tree shape: 0 for a binomial tree, K >= 2 for a K-ary tree (--fanout 32 for thousands of ranks)")
	fs.Var((*server.TreeShape)(&o.RankTree), "tree", "hosts: the ranks of a host share one node of the tree, whose links to it never leave the host; ranks: one node per rank, as PTP's tree")
	fs.StringVar(&o.Members, "members", routing.MembersHand, "with --tree=hosts: hand (a host's servers hand their ranks to its first, which debugs them all; each starts its rank's gdb as its own child when asked) or serve (each debugs its own rank)")
	fs.IntVar(&o.RanksPerGDB, "ranks-per-gdb", server.RanksPerGDB(), "how many of a host's ranks share one gdb, an inferior each (under --gdb lazy, the gdbs start at the first command that needs one); 1 gives each rank a gdb of its own, for a comparison or a program gdb cannot share (default $"+server.RanksPerGDBEnv+", else "+strconv.Itoa(server.DefaultRanksPerGDB)+", fastest on a host of many ranks)")
	fs.DurationVar(&c.Timeout, "timeout", 30*time.Second, "how long a command waits for its ranks (--timeout 2m)")
	fs.DurationVar(&o.ConnectTimeout, "connect-timeout", 60*time.Second, "how long to wait for every rank's server to join (--connect-timeout 5m)")
	fs.BoolVar(&o.Debug, "debug", false, "servers trace what they do into the session's log")
	fs.StringVar(&o.SSH, "ssh", "ssh", "the ssh command, with options, for other hosts (--ssh 'ssh -p 2222 -i ~/.ssh/cluster')")
	return f
}

// gdbUsage is --gdb's, of the commands that start rank servers of gdb.
const gdbUsage = "when each rank's gdb starts: lazy (at the first command that needs one, such as break or print; stacks, where, status, halt, continue and kill sample and signal the running ranks without gdb) or eager (every rank's gdb from the start)"

// ready is the front end the flags describe, with the dlopen setting
// from the flags and the environment; it says what in that setting will
// have no effect. A bad value is a usage error.
func (f *sessionFlags) ready() (launcher.Front, error) {
	given := func(name string, v *string) *string { // nil: the environment's, or the default
		if f.fs.Changed(name) {
			return v
		}
		return nil
	}
	dl, notes, err := dlopen.Resolve(os.LookupEnv, given("dlopen-mode", &f.dlopenMode), given("dlopen-match", &f.dlopenMatch))
	if err != nil {
		return launcher.Front{}, exit.Usage(err)
	}
	for _, n := range notes {
		fmt.Fprintln(os.Stderr, "sdm:", n)
	}
	f.job.Log = log.New(os.Stderr, "sdm: ", 0)
	fr := f.front
	fr.Out, fr.Errors, fr.Terminal, fr.Log, fr.Dlopen, fr.Ended = os.Stdout, os.Stderr, console.IsTerminal(os.Stderr), f.job.Log, dl, exit.EndedBy
	fr.Console.Color = !fr.Console.JSON && console.IsTerminal(os.Stdout) && os.Getenv("NO_COLOR") == ""
	fr.Commands.In, fr.Commands.Errors = os.Stdin, os.Stderr
	return fr, nil
}

// outcome gives a launch refused for what the user asked (the wrong MPI's
// launcher, say) and commands typed wrong the exit status of a usage
// error, and a session that ends as its program did (--exit-status
// program) the program's.
func outcome(err error) error {
	var r *launcher.RefusedError
	if errors.As(err, &r) || errors.Is(err, console.ErrScriptErrors) {
		return exit.Usage(err)
	}
	var p *console.ProgramExit
	if errors.As(err, &p) {
		return &exit.Error{Code: p.Code, Err: err}
	}
	return err
}

// endContext returns a context that sdm's end cancels, with the signal as
// its cause: SIGTERM (timeout, a batch system), SIGHUP (a closed
// terminal), and SIGINT unless the console reads a terminal, where ^C
// interrupts a command instead. Whatever the session started is then
// ended before sdm exits; the stop function releases the signals.
func endContext(f *sessionFlags) (context.Context, func()) {
	sigs := []os.Signal{syscall.SIGTERM, syscall.SIGHUP}
	if cmds := f.front.Commands; !console.IsTerminal(os.Stdin) || len(cmds.Exprs) > 0 || cmds.Batch != "" || cmds.Drive != nil {
		sigs = append(sigs, syscall.SIGINT)
	}
	return exit.Signalled(sigs...)
}
