package main

import (
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/pflag"

	"github.com/sdm-hpc/sdm/internal/exit"
	"github.com/sdm-hpc/sdm/launcher"
	"github.com/sdm-hpc/sdm/report"
)

// runReport runs a job unattended and writes what happened (package
// report).
func runReport(args []string) error {
	fs := pflag.NewFlagSet("sdm report", pflag.ContinueOnError)
	l := launcher.AddLaunchFlags(fs, launcher.AddJobFlags(fs))
	rf := report.AddFlags(fs)
	o := &rf.Options
	var m launcher.MPIR
	fs.IntVar(&m.Pid, "pid", 0, "watch a running job instead, acquired through its starter's MPIR (mpirun, srun) by its process id; it is left running when the report is written (--pid 4242)")
	fs.StringVar(&m.Slurm, "slurm", "", "watch a running SLURM job step instead, by its id, JOBID.STEP or JOBID (--slurm 1234.0)")
	if help, err := parseFlags(fs, args, helpFile("report")); help || err != nil {
		return err
	}
	o.Attached = fs.Changed("pid") || fs.Changed("slurm")
	if o.Attached {
		if err := m.CheckRunning(launcher.Given{Pid: fs.Changed("pid"), Slurm: fs.Changed("slurm")}); err != nil {
			return exit.Usage(fmt.Errorf("sdm report: %w", err))
		}
		if fs.NArg() > 0 {
			return exit.Usage(fmt.Errorf("sdm report: unexpected %q (the job runs already)", fs.Arg(0)))
		}
		l.Job.Debugger = "gdb-mi"
	} else if err := l.Check(); err != nil {
		return err
	}
	if err := rf.Parsed(); err != nil {
		return exit.Usage(err)
	}
	front, err := l.Ready()
	if err != nil {
		return err
	}
	requests := make(chan report.Request, 4)
	o.Requests, o.Program, o.Text = requests, fs.Args(), os.Stdout
	if o.Attached {
		o.Program = []string{attachedName(m)}
	}
	w := report.New(*o)
	front.Out, front.Console.JSON, front.Console.Color, front.Console.ProgramStatus, front.Console.LiveOutput = w.Writer(), true, false, true, true
	front.Commands.Drive = w.Drive
	// SIGUSR1 takes a snapshot (SLURM's --signal=B:USR1@120 before the
	// allocation ends); SIGTERM, SIGINT or SIGHUP a last one, then the job
	// ends and the report is written; a second one ends sdm at once.
	usr1 := make(chan os.Signal, 1)
	signal.Notify(usr1, syscall.SIGUSR1)
	defer signal.Stop(usr1)
	go func() {
		for range usr1 {
			ask(requests, report.Request{Why: "SIGUSR1"})
		}
	}()
	ctx, stop := exit.SignalledTwice(func(sig os.Signal) {
		ask(requests, report.Request{Why: exit.Name(sig.(syscall.Signal)), End: true})
	}, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	defer stop()
	if o.Attached {
		err = front.Acquire(ctx, l.Job, m, nil, false)
	} else {
		err = l.Start(ctx, front, fs.Args())
	}
	if werr := w.Unstarted(err); werr != nil {
		err = errors.Join(err, werr)
	}
	return launcher.Outcome(err)
}

// attachedName names a running job as its flags do.
func attachedName(m launcher.MPIR) string {
	if m.Slurm != "" {
		return "the job --slurm " + m.Slurm
	}
	return fmt.Sprintf("the job --pid %d", m.Pid)
}

// ask hands a request on, or drops it when as many wait already.
func ask(requests chan<- report.Request, r report.Request) {
	select {
	case requests <- r:
	default:
	}
}
