package main

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/spf13/pflag"

	"github.com/sdm-hpc/sdm/backend"
	"github.com/sdm-hpc/sdm/internal/exit"
	"github.com/sdm-hpc/sdm/launcher"
)

func runDebug(args []string) error {
	fs := pflag.NewFlagSet("sdm debug", pflag.ContinueOnError)
	l := addLaunchFlags(fs, addSessionFlags(fs))
	if help, err := parseFlags(fs, args, helpFile("debug")); help || err != nil {
		return err
	}
	front, err := l.ready()
	if err != nil {
		return err
	}
	if err := l.check(fs); err != nil {
		return err
	}
	ctx, stop := endContext(l.sessionFlags)
	defer stop()
	return outcome(l.start(ctx, front, fs.Args()))
}

// launchFlags are the flags of the commands that start a job: sdm debug
// and sdm report.
type launchFlags struct {
	*sessionFlags
	debugger, forward string
	mpir, starter     bool
}

func addLaunchFlags(fs *pflag.FlagSet, f *sessionFlags) *launchFlags {
	l := &launchFlags{sessionFlags: f}
	o := &f.job
	fs.StringVar(&o.RM, "rm", "auto", "who starts the job: auto (SLURM in an allocation, POE in a partition, else the MPI the program links, else local; says which), local (this machine), openmpi (mpirun), mpich (mpiexec), slurm (srun), pe (poe)")
	fs.BoolVar(&o.Queues, "queues", true, "preload sdm's library that keeps each rank's MPI operations in flight, for queues and deadlock; --queues=false starts the program as it is")
	fs.BoolVar(&o.Force, "force", false, "start the program under --rm even when it links another MPI (each rank then a job of its own)")
	fs.StringVar(&o.Launcher, "launcher", "", "the launcher program instead of the one in $PATH (--launcher=/opt/ompi/bin/mpirun)")
	fs.StringArrayVar(&o.LauncherArgs, "launcher-arg", nil, "an argument for the launcher, before the program; repeatable (--launcher-arg=--oversubscribe)")
	fs.IntVarP(&o.Size, "np", "n", 1, "number of ranks (-n 8)")
	fs.StringVar(&l.debugger, "debugger", "gdb", "the debugger beside every rank: gdb, or sim, simulated stacks with no program (--debugger sim -- groups 3); --backend is its former name, still accepted")
	o.GDB = backend.Lazy
	fs.Var(&o.GDB, "gdb", gdbUsage)
	fs.StringVar(&l.debugger, "backend", "gdb", "--debugger's former name, for the scripts that use it")
	fs.MarkHidden("backend")
	fs.BoolVar(&l.mpir, "mpir", false, "start the program itself with the launcher (no sdm around each rank) and acquire its ranks through MPIR (--mpir --rm openmpi)")
	fs.BoolVar(&l.starter, "starter", false, "with --mpir: the command after -- is the starter's whole command line (-- mpirun -np 8 ./ring)")
	fs.StringVar(&o.Target, "target", "", "run the launcher and the master on this [user@]host, over ssh (--target me@login1); paths are then paths there")
	fs.StringVar(&l.forward, "forward", "", "have ssh forward a port of [user@]host to the session port, for a master there that cannot reach this machine; implies --target (--forward me@login1)")
	fs.StringVar(&o.ClientHost, "client-host", "", "how the target reaches this machine when nothing is forwarded (default: its address on the route toward the target)")
	return l
}

// check refuses what the flags cannot mean together, as a usage error.
func (l *launchFlags) check(fs *pflag.FlagSet) error {
	o := &l.job
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

// start starts the job argv names (or its starter's command line) and
// runs the session.
func (l *launchFlags) start(ctx context.Context, front launcher.Front, argv []string) error {
	if l.mpir {
		out := new(launcher.StarterOutput)
		m := launcher.MPIR{Argv: argv, Starter: l.starter, Lines: out.Line}
		return front.Acquire(ctx, l.job, m, out, l.starter)
	}
	return front.Debug(ctx, l.job, argv)
}
