package main

import (
	"errors"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/spf13/pflag"

	"github.com/sdm-hpc/sdm/backend"
	"github.com/sdm-hpc/sdm/console"
	"github.com/sdm-hpc/sdm/dlopen"
	"github.com/sdm-hpc/sdm/internal/exit"
	"github.com/sdm-hpc/sdm/launcher"
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
	f := &sessionFlags{fs: fs}
	c, cmds, o := &f.front.Console, &f.front.Commands, &f.job
	fs.StringVar(&f.dlopenMode, "dlopen-mode", string(dlopen.Default().Mode), "what a library load does: auto (stop only while a breakpoint is pending), slow (stop, report, plant breakpoints), medium (report only --dlopen-match), fast (never stop); see below")
	fs.StringVar(&f.dlopenMatch, "dlopen-match", "", "the colon-separated list of library names whose loads medium and auto mode report, each may end in * (--dlopen-match 'libcuda.so*:libmine.so')")
	fs.StringVar(&cmds.Batch, "batch", "", "run the commands in FILE, one per line, then quit (--batch cmds.txt)")
	fs.StringArrayVarP(&cmds.Exprs, "eval", "e", nil, "run this command, then quit; repeatable, in order (-e 'break main' -e run)")
	fs.BoolVar(&c.JSON, "json", false, "print one JSON object per line, each with a ranks field such as \"0-2,4-7\"")
	fs.IntVar(&o.Fanout, "fanout", 0, "tree shape: 0 for a binomial tree, K >= 2 for a K-ary tree (--fanout 32 for thousands of ranks)")
	fs.DurationVar(&c.Timeout, "timeout", 30*time.Second, "how long a command waits for its ranks (--timeout 2m)")
	fs.DurationVar(&o.ConnectTimeout, "connect-timeout", 60*time.Second, "how long to wait for every rank's server to join (--connect-timeout 5m)")
	fs.BoolVar(&o.Debug, "debug", false, "servers trace what they do into the session's log")
	fs.StringVar(&o.SSH, "ssh", "ssh", "the ssh command, with options, for other hosts (--ssh 'ssh -p 2222 -i ~/.ssh/cluster')")
	return f
}

func parseFlags(fs *pflag.FlagSet, args []string, usage string) (help bool, err error) {
	fs.Usage = func() { fmt.Fprint(os.Stderr, helpText(usage, fs)) }
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return true, nil
		}
		return false, exit.Usage(err)
	}
	return false, nil
}

// formerNames maps flags renamed since to their names now, so that
// scripts written for the old name go on working.
func formerNames(_ *pflag.FlagSet, name string) pflag.NormalizedName {
	if name == "backend" {
		return "debugger"
	}
	return pflag.NormalizedName(name)
}

func runDebug(args []string) error {
	fs := pflag.NewFlagSet("sdm debug", pflag.ContinueOnError)
	f := addSessionFlags(fs)
	o := &f.job
	fs.StringVar(&o.RM, "rm", "auto", "who starts the job: auto (SLURM in an allocation, POE in a partition, else the MPI the program links, else local; says which), local (this machine), openmpi (mpirun), mpich (mpiexec), slurm (srun), pe (poe)")
	fs.BoolVar(&o.Force, "force", false, "start the program under --rm even when it links another MPI (each rank then a job of its own)")
	fs.StringVar(&o.Launcher, "launcher", "", "the launcher program instead of the one in $PATH (--launcher=/opt/ompi/bin/mpirun)")
	fs.StringArrayVar(&o.LauncherArgs, "launcher-arg", nil, "an argument for the launcher, before the program; repeatable (--launcher-arg=--oversubscribe)")
	fs.IntVarP(&o.Size, "np", "n", 1, "number of ranks (-n 8)")
	debuggerName := fs.String("debugger", "gdb", "the debugger beside every rank: gdb, or sim, simulated stacks with no program (--debugger sim -- groups 3); --backend is its former name, still accepted")
	fs.SetNormalizeFunc(formerNames)
	useMPIR := fs.Bool("mpir", false, "start the program itself with the launcher (no sdm around each rank) and acquire its ranks through MPIR (--mpir --rm openmpi)")
	starter := fs.Bool("starter", false, "with --mpir: the command after -- is the starter's whole command line (-- mpirun -np 8 ./ring)")
	fs.StringVar(&o.Target, "target", "", "run the launcher and the master on this [user@]host, over ssh (--target me@login1); paths are then paths there")
	forward := fs.String("forward", "", "have ssh forward a port of [user@]host to the session port, for a master that cannot reach this machine; implies --target (--forward me@login1)")
	fs.StringVar(&o.ClientHost, "client-host", "", "how the target reaches this machine when nothing is forwarded (default: this machine's host name)")
	if help, err := parseFlags(fs, args, helpFile("debug")); help || err != nil {
		return err
	}
	front, err := f.ready()
	if err != nil {
		return err
	}
	if fs.NArg() == 0 {
		return exit.Usage(errors.New("sdm debug: no program given (sdm debug [flags] -- PROGRAM [ARGS...])"))
	}
	if o.Debugger, err = backend.ParseDebugger(*debuggerName); err != nil {
		return exit.Usage(fmt.Errorf("--debugger %s: want gdb or sim", *debuggerName))
	}
	if o.Size < 1 {
		return exit.Usage(fmt.Errorf("-n %d: need at least one rank", o.Size))
	}
	if *starter && !*useMPIR {
		return exit.Usage(errors.New("--starter goes with --mpir"))
	}
	if *forward != "" {
		if o.Target != "" && o.Target != *forward {
			return exit.Usage(fmt.Errorf("--forward %s and --target %s name different hosts", *forward, o.Target))
		}
		o.Target, o.Forward = *forward, true
	}
	ctx, stop := endContext(f)
	defer stop()
	o.Program = fs.Arg(0)
	o.Dir, _ = os.Getwd()
	if *useMPIR {
		out := new(launcher.StarterOutput)
		m := launcher.MPIR{Argv: fs.Args(), Starter: *starter, Lines: out.Line}
		return outcome(front.Acquire(ctx, *o, m, out, *starter))
	}
	return outcome(front.Debug(ctx, *o, fs.Args()))
}

// ready is the front end the flags describe, with the dlopen setting
// from the flags and the environment.
func (f *sessionFlags) ready() (launcher.Front, error) {
	dl, err := f.dlopen()
	if err != nil {
		return launcher.Front{}, err
	}
	logger := log.New(os.Stderr, "sdm: ", 0)
	fr := f.front
	fr.Out, fr.Errors, fr.Terminal, fr.Log, fr.Dlopen, fr.Ended = os.Stdout, os.Stderr, isTerminal(os.Stderr), logger, dl, exit.EndedBy
	fr.Console.Color = !fr.Console.JSON && isTerminal(os.Stdout) && os.Getenv("NO_COLOR") == ""
	fr.Commands.In, fr.Commands.Errors = os.Stdin, os.Stderr
	f.job.Log = logger
	return fr, nil
}

// outcome gives a launch refused for what the user asked (the wrong MPI's
// launcher, say) and commands typed wrong the exit status of a usage
// error.
func outcome(err error) error {
	var r *launcher.RefusedError
	if errors.As(err, &r) || errors.Is(err, console.ErrScriptErrors) {
		return exit.Usage(err)
	}
	return err
}
