package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/spf13/pflag"

	"github.com/sdm-hpc/sdm/backend"
	"github.com/sdm-hpc/sdm/console"
	"github.com/sdm-hpc/sdm/dlopen"
	"github.com/sdm-hpc/sdm/launcher"
)

// sessionFlags are the flags of every command that ends in a session.
type sessionFlags struct {
	fs          *pflag.FlagSet
	dlopenMode  *string
	dlopenMatch *string
	batch       *string
	exprs       *[]string
	jsonOut     *bool
	fanout      *int
	timeout     *time.Duration
	connect     *time.Duration
	verbose     *bool
	sshCommand  *string
}

func addSessionFlags(fs *pflag.FlagSet) *sessionFlags {
	f := &sessionFlags{fs: fs, exprs: new([]string)}
	f.dlopenMode = fs.String("dlopen-mode", string(dlopen.Default().Mode), "what a library load does: auto (stop only while a breakpoint is pending), slow (stop, report, plant breakpoints), medium (report only --dlopen-match), fast (never stop); see below")
	f.dlopenMatch = fs.String("dlopen-match", "", "the colon-separated list of library names whose loads medium and auto mode report, each may end in * (--dlopen-match 'libcuda.so*:libmine.so')")
	f.batch = fs.String("batch", "", "run the commands in FILE, one per line, then quit (--batch cmds.txt)")
	fs.StringArrayVarP(f.exprs, "eval", "e", nil, "run this command, then quit; repeatable, in order (-e 'break main' -e run)")
	f.jsonOut = fs.Bool("json", false, "print one JSON object per line, each with a ranks field such as \"0-2,4-7\"")
	f.fanout = fs.Int("fanout", 0, "tree shape: 0 for a binomial tree, K >= 2 for a K-ary tree (--fanout 32 for thousands of ranks)")
	f.timeout = fs.Duration("timeout", 30*time.Second, "how long a command waits for its ranks (--timeout 2m)")
	f.connect = fs.Duration("connect-timeout", 60*time.Second, "how long to wait for every rank's server to join (--connect-timeout 5m)")
	f.verbose = fs.Bool("debug", false, "servers trace what they do into the session's log")
	f.sshCommand = fs.String("ssh", "ssh", "the ssh command, with options, for other hosts (--ssh 'ssh -p 2222 -i ~/.ssh/cluster')")
	return f
}

func parseFlags(fs *pflag.FlagSet, args []string, usage string) (help bool, err error) {
	fs.Usage = func() { fmt.Fprint(os.Stderr, helpText(usage, fs)) }
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return true, nil
		}
		return false, &exitError{2, err}
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
	rmName := fs.String("rm", "auto", "who starts the job: auto (SLURM in an allocation, POE in a partition, else the MPI the program links, else local; says which), local (this machine), openmpi (mpirun), mpich (mpiexec), slurm (srun), pe (poe)")
	force := fs.Bool("force", false, "start the program under --rm even when it links another MPI (each rank then a job of its own)")
	launcherPath := fs.String("launcher", "", "the launcher program instead of the one in $PATH (--launcher=/opt/ompi/bin/mpirun)")
	var launcherArgs []string
	fs.StringArrayVar(&launcherArgs, "launcher-arg", nil, "an argument for the launcher, before the program; repeatable (--launcher-arg=--oversubscribe)")
	size := fs.IntP("np", "n", 1, "number of ranks (-n 8)")
	debuggerName := fs.String("debugger", "gdb", "the debugger beside every rank: gdb, or sim, simulated stacks with no program (--debugger sim -- groups 3); --backend is its former name, still accepted")
	fs.SetNormalizeFunc(formerNames)
	useMPIR := fs.Bool("mpir", false, "start the program itself with the launcher (no sdm around each rank) and acquire its ranks through MPIR (--mpir --rm openmpi)")
	starter := fs.Bool("starter", false, "with --mpir: the command after -- is the starter's whole command line (-- mpirun -np 8 ./ring)")
	f := addSessionFlags(fs)
	target := fs.String("target", "", "run the launcher and the master on this [user@]host, over ssh (--target me@login1); paths are then paths there")
	forward := fs.String("forward", "", "have ssh forward a port of [user@]host to the session port, for a master there that cannot reach this machine; implies --target (--forward me@login1)")
	clientHost := fs.String("client-host", "", "how the target reaches this machine when nothing is forwarded (default: this machine's host name)")
	if help, err := parseFlags(fs, args, debugUsage); help || err != nil {
		return err
	}
	dl, err := f.dlopen()
	if err != nil {
		return err
	}
	if fs.NArg() == 0 {
		return &exitError{2, errors.New("sdm debug: no program given (sdm debug [flags] -- PROGRAM [ARGS...])")}
	}
	debugger, err := backend.ParseDebugger(*debuggerName)
	if err != nil {
		return &exitError{2, fmt.Errorf("--debugger %s: want gdb or sim", *debuggerName)}
	}
	if *size < 1 {
		return &exitError{2, fmt.Errorf("-n %d: need at least one rank", *size)}
	}
	if *starter && !*useMPIR {
		return &exitError{2, errors.New("--starter goes with --mpir")}
	}
	if *forward != "" {
		if *target != "" && *target != *forward {
			return &exitError{2, fmt.Errorf("--forward %s and --target %s name different hosts", *forward, *target)}
		}
		*target = *forward
	}
	ctx, stop := endContext(f)
	defer stop()
	dir, _ := os.Getwd()
	o := launcher.Options{
		RM: *rmName, Size: *size, Fanout: *f.fanout, Debugger: debugger,
		Program: fs.Arg(0), Dir: dir, Launcher: *launcherPath, LauncherArgs: launcherArgs, Force: *force,
		Target: *target, SSH: *f.sshCommand, Forward: *forward != "", ClientHost: *clientHost,
		ConnectTimeout: *f.connect, Debug: *f.verbose, Log: log.New(os.Stderr, "sdm: ", 0),
	}
	if *useMPIR {
		out := new(launcher.StarterOutput)
		return acquire(ctx, o, launcher.MPIR{Argv: fs.Args(), Starter: *starter, Lines: out.Line}, f, dl, out, *starter)
	}
	return launchAndRun(ctx, o, f, dl, fs.Args())
}

// launchAndRun starts the program's job, loads the program, and runs the
// session's commands.
func launchAndRun(ctx context.Context, o launcher.Options, f *sessionFlags, dl dlopen.Setting, program []string) error {
	progress := &launcher.Narrator{ProgressLine: launcher.NewProgressLine(os.Stderr, isTerminal(os.Stderr)), Log: o.Log}
	o.Progress = progress.Step
	s, err := launcher.Launch(ctx, o)
	progress.Clear()
	if err != nil {
		if ended := endedBy(ctx, nil); ended != nil {
			return ended // the launch cut short: its job is gone
		}
		return refused(err)
	}
	load := func(ctx context.Context, s *launcher.Session) error {
		return s.Load(ctx, program, o.Dir, *f.timeout)
	}
	return runSession(ctx, launched(s, load, progress.Clear), f, console.Options{}, func(*console.Console) error {
		if err := applyDlopen(ctx, s, dl, *f.timeout); err != nil {
			return err
		}
		return load(ctx, s)
	})
}

// refused gives a launch refused for what the user asked (the wrong MPI's
// launcher, say) the exit status of a usage error.
func refused(err error) error {
	var r *launcher.RefusedError
	if errors.As(err, &r) {
		return &exitError{2, err}
	}
	return err
}

// runSession runs the commands of a session that came up, after prepare,
// ends it and says how it went in the exit status.
func runSession(ctx context.Context, s console.Session, f *sessionFlags, opts console.Options, prepare func(*console.Console) error) error {
	opts.JSON, opts.Timeout = *f.jsonOut, *f.timeout
	opts.Color = !*f.jsonOut && isTerminal(os.Stdout) && os.Getenv("NO_COLOR") == ""
	s.Ended = endedBy
	cmds := console.Commands{Exprs: *f.exprs, Batch: *f.batch, In: os.Stdin, Errors: os.Stderr}
	err := s.Run(ctx, os.Stdout, opts, cmds, prepare)
	if errors.Is(err, console.ErrScriptErrors) {
		return &exitError{2, err}
	}
	return err
}

// launched is the session of a job sdm started or took over; load, when
// set, loads the program in a job started again.
func launched(s *launcher.Session, load func(context.Context, *launcher.Session) error, settle func()) console.Session {
	r := launcher.NewRelaunchable(s, load, settle, log.New(os.Stderr, "sdm: ", 0))
	return console.Session{Tree: r.Tree(), End: r.End, Watch: r.Watch, Restart: r}
}
