package main

import (
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
	f := addSessionFlags(fs)
	o := &f.job
	fs.StringVar(&o.RM, "rm", "auto", "who starts the job: auto (SLURM in an allocation, POE in a partition, else the MPI the program links, else local; says which), local (this machine), openmpi (mpirun), mpich (mpiexec), slurm (srun), pe (poe)")
	fs.BoolVar(&o.Queues, "queues", true, "preload sdm's library that keeps each rank's MPI operations in flight, for queues and deadlock; --queues=false starts the program as it is")
	fs.BoolVar(&o.Force, "force", false, "start the program under --rm even when it links another MPI (each rank then a job of its own)")
	fs.StringVar(&o.Launcher, "launcher", "", "the launcher program instead of the one in $PATH (--launcher=/opt/ompi/bin/mpirun)")
	fs.StringArrayVar(&o.LauncherArgs, "launcher-arg", nil, "an argument for the launcher, before the program; repeatable (--launcher-arg=--oversubscribe)")
	fs.IntVarP(&o.Size, "np", "n", 1, "number of ranks (-n 8)")
	debuggerName := fs.String("debugger", "gdb", "the debugger beside every rank: gdb, or sim, simulated stacks with no program (--debugger sim -- groups 3); --backend is its former name, still accepted")
	o.GDB = backend.Lazy
	fs.Var(&o.GDB, "gdb", gdbUsage)
	fs.StringVar(debuggerName, "backend", "gdb", "--debugger's former name, for the scripts that use it")
	fs.MarkHidden("backend")
	useMPIR := fs.Bool("mpir", false, "start the program itself with the launcher (no sdm around each rank) and acquire its ranks through MPIR (--mpir --rm openmpi)")
	starter := fs.Bool("starter", false, "with --mpir: the command after -- is the starter's whole command line (-- mpirun -np 8 ./ring)")
	fs.StringVar(&o.Target, "target", "", "run the launcher and the master on this [user@]host, over ssh (--target me@login1); paths are then paths there")
	forward := fs.String("forward", "", "have ssh forward a port of [user@]host to the session port, for a master there that cannot reach this machine; implies --target (--forward me@login1)")
	fs.StringVar(&o.ClientHost, "client-host", "", "how the target reaches this machine when nothing is forwarded (default: its address on the route toward the target)")
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
