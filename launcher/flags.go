package launcher

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

	"github.com/sdm-hpc/sdm/backend"
	"github.com/sdm-hpc/sdm/console"
	"github.com/sdm-hpc/sdm/dlopen"
	"github.com/sdm-hpc/sdm/internal/exit"
	"github.com/sdm-hpc/sdm/routing"
)

// Flags are the flags of every sdm command that ends in a session, next
// to what they set: the front end's (Front) and those of the job and its
// servers (Job).
type Flags struct {
	Front                   Front
	Job                     Options
	fs                      *pflag.FlagSet
	dlopenMode, dlopenMatch string
}

// AddSessionFlags adds to fs the flags of a session: its job's and its
// console's commands.
func AddSessionFlags(fs *pflag.FlagSet) *Flags {
	f := AddJobFlags(fs)
	c, cmds := &f.Front.Console, &f.Front.Commands
	fs.StringVar(&cmds.Batch, "batch", "", "run the commands in FILE, one per line, then quit (--batch cmds.txt)")
	fs.StringArrayVarP(&cmds.Exprs, "eval", "e", nil, "run this command, then quit; repeatable, in order (-e 'break main' -e run)")
	fs.Var((*console.ExitStatus)(&c.ProgramStatus), "exit-status", "what sdm's exit status tells: sdm (whether every command and answer went well), or program (the ranks' worst exit status, 128+N for a rank signal N ended, for CI)")
	fs.BoolVar(&c.JSON, "json", false, "print one JSON object per line: one reply per command, and the events (docs/JSON.md)")
	return f
}

// AddJobFlags adds to fs the flags of a session's job and its servers,
// those of every command that ends in a session but the console's
// commands.
func AddJobFlags(fs *pflag.FlagSet) *Flags {
	f := &Flags{fs: fs}
	c, o := &f.Front.Console, &f.Job
	fs.StringVar(&f.dlopenMode, "dlopen-mode", string(dlopen.Default().Mode), "what a library load does: auto (stop only while a breakpoint is pending), slow (stop, report, plant breakpoints), medium (report only --dlopen-match), fast (never stop); see below")
	fs.StringVar(&f.dlopenMatch, "dlopen-match", "", "the colon-separated list of library names whose loads medium and auto mode report, each may end in * (--dlopen-match 'libcuda.so*:libmine.so')")
	fs.IntVar(&o.Fanout, "fanout", 0, "tree shape: 0 for a binomial tree, K >= 2 for a K-ary tree (--fanout 32 for thousands of ranks)")
	fs.Var((*routing.TreeShape)(&o.RankTree), "tree", "hosts: the ranks of a host share one node of the tree, whose links to it never leave the host; ranks: one node per rank, as PTP's tree")
	fs.StringVar(&o.Members, "members", routing.MembersHand, "with --tree=hosts: hand (a host's servers hand their ranks to its first, which debugs them all; each starts its rank's gdb as its own child when asked) or serve (each debugs its own rank)")
	fs.IntVar(&o.RanksPerGDB, "ranks-per-gdb", backend.RanksPerGDB(), "how many of a host's ranks share one gdb, an inferior each (under --gdb lazy, the gdbs start at the first command that needs one); 1 gives each rank a gdb of its own, for a comparison or a program gdb cannot share (default $"+backend.RanksPerGDBEnv+", else "+strconv.Itoa(backend.DefaultRanksPerGDB)+", fastest on a host of many ranks)")
	fs.DurationVar(&c.Timeout, "timeout", 30*time.Second, "how long a command waits for its ranks (--timeout 2m)")
	fs.DurationVar(&o.ConnectTimeout, "connect-timeout", 60*time.Second, "how long to wait for every rank's server to join (--connect-timeout 5m)")
	fs.BoolVar(&o.Debug, "debug", false, "servers trace what they do into the session's log")
	fs.StringVar(&o.SSH, "ssh", "ssh", "the ssh command, with options, for other hosts (--ssh 'ssh -p 2222 -i ~/.ssh/cluster')")
	return f
}

// GDBUsage is --gdb's, of the commands that start rank servers of gdb.
const GDBUsage = "when each rank's gdb starts: lazy (at the first command that needs one, such as break or print; stacks, where, status, halt, continue and kill sample and signal the running ranks without gdb) or eager (every rank's gdb from the start)"

// Ready is the front end the flags describe, on the process's standard
// streams, with the dlopen setting from the flags and the environment;
// it says what in that setting will have no effect. A bad value is a
// usage error.
func (f *Flags) Ready() (Front, error) {
	given := func(name string, v *string) *string { // nil: the environment's, or the default
		if f.fs.Changed(name) {
			return v
		}
		return nil
	}
	dl, notes, err := dlopen.Resolve(os.LookupEnv, given("dlopen-mode", &f.dlopenMode), given("dlopen-match", &f.dlopenMatch))
	if err != nil {
		return Front{}, exit.Usage(err)
	}
	for _, n := range notes {
		fmt.Fprintln(os.Stderr, "sdm:", n)
	}
	f.Job.Log = log.New(os.Stderr, "sdm: ", 0)
	fr := f.Front
	fr.Out, fr.Errors, fr.Terminal, fr.Log, fr.Dlopen, fr.Ended = os.Stdout, os.Stderr, console.IsTerminal(os.Stderr), f.Job.Log, dl, exit.EndedBy
	fr.Console.Color = !fr.Console.JSON && console.IsTerminal(os.Stdout) && os.Getenv("NO_COLOR") == ""
	fr.Commands.In, fr.Commands.Errors = os.Stdin, os.Stderr
	return fr, nil
}

// LaunchFlags are the flags of the commands that start a job: sdm debug
// and sdm report.
type LaunchFlags struct {
	*Flags
	debugger, forward string
	mpir, starter     bool
}

// AddLaunchFlags adds to fs, beside f, the flags that say how a job is
// started.
func AddLaunchFlags(fs *pflag.FlagSet, f *Flags) *LaunchFlags {
	l := &LaunchFlags{Flags: f}
	o := &f.Job
	fs.StringVar(&o.RM, "rm", "auto", "who starts the job: auto (SLURM in an allocation, POE in a partition, else the MPI the program links, else local; says which), local (this machine), openmpi (mpirun), mpich (mpiexec), slurm (srun), pe (poe)")
	fs.BoolVar(&o.Queues, "queues", true, "preload sdm's library that keeps each rank's MPI operations in flight, for queues and deadlock; --queues=false starts the program as it is (Open MPI's queues are then read through its own message-queue library)")
	fs.BoolVar(&o.Force, "force", false, "start the program under --rm even when it links another MPI (each rank then a job of its own)")
	fs.StringVar(&o.Launcher, "launcher", "", "the launcher program instead of the one in $PATH (--launcher=/opt/ompi/bin/mpirun)")
	fs.StringArrayVar(&o.LauncherArgs, "launcher-arg", nil, "an argument for the launcher, before the program; repeatable (--launcher-arg=--oversubscribe)")
	fs.IntVarP(&o.Size, "np", "n", 1, "number of ranks (-n 8)")
	fs.StringVar(&l.debugger, "debugger", "gdb", "the debugger beside every rank: gdb, or sim, simulated stacks with no program (--debugger sim -- groups 3); --backend is its former name, still accepted")
	o.GDB = backend.Lazy
	fs.Var(&o.GDB, "gdb", GDBUsage)
	fs.StringVar(&l.debugger, "backend", "gdb", "--debugger's former name, for the scripts that use it")
	fs.MarkHidden("backend")
	fs.BoolVar(&l.mpir, "mpir", false, "start the program itself with the launcher (no sdm around each rank) and acquire its ranks through MPIR (--mpir --rm openmpi)")
	fs.BoolVar(&l.starter, "starter", false, "with --mpir: the command after -- is the starter's whole command line (-- mpirun -np 8 ./ring)")
	fs.StringVar(&o.Target, "target", "", "run the launcher and the master on this [user@]host, over ssh (--target me@login1); paths are then paths there")
	fs.StringVar(&l.forward, "forward", "", "have ssh forward a port of [user@]host to the session port, for a master there that cannot reach this machine; implies --target (--forward me@login1)")
	fs.StringVar(&o.ClientHost, "client-host", "", "how the target reaches this machine when nothing is forwarded (default: its address on the route toward the target)")
	return l
}

// Check refuses what the flags cannot mean together, as a usage error,
// and takes the program from the arguments left.
func (l *LaunchFlags) Check() error {
	fs, o := l.fs, &l.Job
	if fs.NArg() == 0 {
		return exit.Usage(fmt.Errorf("%s: no program given (%s [flags] -- PROGRAM [ARGS...])", fs.Name(), fs.Name()))
	}
	var err error
	if o.Debugger, err = backend.ParseDebugger(l.debugger); err != nil {
		return exit.Usage(fmt.Errorf("--debugger %s: want gdb or sim", l.debugger))
	}
	if l.starter && !l.mpir {
		return exit.Usage(errors.New("--starter goes with --mpir"))
	}
	if l.forward != "" {
		if o.Target != "" && o.Target != l.forward {
			return exit.Usage(fmt.Errorf("--forward %s and --target %s name different hosts", l.forward, o.Target))
		}
		o.Target, o.Forward = l.forward, true
	}
	o.Program = fs.Arg(0)
	o.Dir, _ = os.Getwd()
	return nil
}

// Start starts the job argv names (or its starter's command line) and
// runs the session.
func (l *LaunchFlags) Start(ctx context.Context, front Front, argv []string) error {
	if l.mpir {
		out := new(StarterOutput)
		m := MPIR{Argv: argv, Starter: l.starter, Lines: out.Line}
		return front.Acquire(ctx, l.Job, m, out, l.starter)
	}
	return front.Debug(ctx, l.Job, argv)
}

// Outcome gives a launch refused for what the user asked (the wrong MPI's
// launcher, say) and commands typed wrong the exit status of a usage
// error, and a session that ends as its program did (--exit-status
// program) the program's.
func Outcome(err error) error {
	var r *RefusedError
	if errors.As(err, &r) || errors.Is(err, console.ErrScriptErrors) {
		return exit.Usage(err)
	}
	var p *console.ProgramExit
	if errors.As(err, &p) {
		return &exit.Error{Code: p.Code, Err: err}
	}
	return err
}

// EndContext returns a context that sdm's end cancels, with the signal as
// its cause: SIGTERM (timeout, a batch system), SIGHUP (a closed
// terminal), and SIGINT unless the console reads a terminal, where ^C
// interrupts a command instead. Whatever the session started is then
// ended before sdm exits; the stop function releases the signals.
func (f *Flags) EndContext() (context.Context, func()) {
	sigs := []os.Signal{syscall.SIGTERM, syscall.SIGHUP}
	if cmds := f.Front.Commands; !console.IsTerminal(os.Stdin) || len(cmds.Exprs) > 0 || cmds.Batch != "" || cmds.Drive != nil {
		sigs = append(sigs, syscall.SIGINT)
	}
	return exit.Signalled(sigs...)
}
