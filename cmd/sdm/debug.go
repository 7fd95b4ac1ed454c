package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/sdm-hpc/sdm/backend"
	"github.com/sdm-hpc/sdm/console"
	"github.com/sdm-hpc/sdm/dlopen"
	"github.com/sdm-hpc/sdm/launcher"
	"github.com/sdm-hpc/sdm/wire"
)

const debugUsage = `usage: sdm debug [flags] -- PROGRAM [ARGS...]

Starts PROGRAM as an N-rank job with a debug server (and a gdb) beside every
rank, waits until all have joined the tree, loads the program, and runs
debugger commands on any set of ranks. Commands come from -e (in order),
then --batch FILE; without either, from the terminal (with line editing,
history in ~/.sdm_history, and tab completion). Each answer is printed once
per distinct value, with the ranks that gave it first:

  [0-6] stopped in MPI_Recv at recv.c:64 (breakpoint 1)
  [7] stopped in compute at hang.c:15 (SIGINT)

examples:
  sdm debug -n 8 -- ./plain                                  # no MPI: on this machine
  sdm debug -n 8 -e 'break compute' -e run -e wait -e 'print value' -- ./plain
  sdm debug -n 16 --launcher-arg=--oversubscribe -- ./ring  # Open MPI's: under mpirun
  sdm debug -n 64 -- ./ring                                  # inside an allocation: srun --mpi=pmix
  sdm debug --rm openmpi -n 8 --json --batch cmds.txt -- ./ring
  sdm debug --rm slurm --forward me@login1 -n 32 -- /home/me/ring  # from a laptop
  sdm debug -n 64 --debugger sim -e stacks -- hang           # no gdb: simulated stacks
  sdm debug --mpir -n 8 -- ./ring                            # mpirun starts ./ring itself; MPIR
  sdm debug --mpir --starter -- ./my-starter -n 8 ./ring     # any starter with the MPIR interface

Programs run as their users run them: an MPI program under its own MPI's
launcher. The default, --rm auto, picks inside a SLURM allocation
(SLURM_JOB_ID) srun, inside a POE partition (MP_PROCS) poe, else the MPI
whose library the program links (libmpi.so.40: Open MPI's mpirun;
libmpich.so: MPICH's mpiexec), else this machine, and says which and why
("sdm: using openmpi (./ring links libmpi.so.40)"). A wrapper script is not
followed: it runs on this machine. Under srun, a program that links an MPI
gets the plugin it needs (--mpi=pmix for Open MPI, --mpi=pmi2 for MPICH)
unless a --launcher-arg names one. An --rm whose launcher is not the
program's MPI's (--rm local for an MPI program of several ranks, --rm
openmpi for an MPICH one) is refused before anything starts, since every
rank would be a job of its own; --force runs it anyway. With --target,
name the resource manager: sdm does not read a program on another host.

With --mpir the launcher starts the program itself, with no sdm around
each rank, and sdm acquires the ranks through the MPIR interface: it holds
the starter in MPIR_Breakpoint, reads its table of processes, attaches a
gdb to every rank, and lets the starter go. The ranks wait, stopped, for
the first command. Their output comes through the launcher, which is asked
to label it (mpirun --tag-output, srun --label), so that it prints with its
ranks as in every other mode. MPICH's mpiexec has no MPIR. To take over a
job that runs already: sdm attach.

Every command may start with a rank set ([0-3,7], [all], or a name given
with defset); type help for the list: run, restart, continue, next, step,
finish, halt, kill, wait, status, break, tbreak, watch, delete, enable,
disable, condition, ignore, breakpoints, where, stacks, frame, print, ptype,
locals, args, globals, threads, thread, x, poke, signals, handle, gdb, set,
show, focus, defset, sets, quit.

To run the program again, restart: it ends the whole job and starts it
again through its launcher (the same --rm, options, size, program and
directory, or the same MPIR launch), with the breakpoints under their old
numbers, the dlopen settings, the rank sets and the focus, and runs it.
Under mpirun, mpiexec, srun or poe, run starts the ranks once only: run
again alone, a rank would start outside its job and die in MPI_Init.

` + dlopenUsage + `

A wait (or step, next, finish) whose ranks still run at its deadline
(--timeout, or wait SECONDS) does not end a script: it lists them, such as
"[1-3] still running after 30s", and the next command runs, so that halt,
wait and stacks then show where they were. A step that does not come back
says where it began; in an MPI program, a call there may wait for other
ranks. wait any returns once one rank of the set stops, exits or is lost,
and lists those still running. With --json these notes are objects with a
note field (still-running, interrupted, halting), the command and the ranks.
At the terminal, ^C at the prompt halts the running ranks of the focus set,
as in gdb; ^C during a command stops it: a wait stops waiting, and leaves
the ranks running ("interrupted: [2-3] still running").

Exit status: 0 when every command ran and every rank answered it without
error; 1 when some rank answered with an error, timed out or was lost, when
ranks still ran at the deadline of a wait or a step (the script asked for a
stop it did not get), or when the session failed; 2 when a flag or a command
was typed wrong (the other commands still run), or --rm names a launcher of
another MPI than the program's. Colour only on a terminal, and never with
$NO_COLOR.

flags:
%s`

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
	fs.Usage = func() { fmt.Fprintf(os.Stderr, usage, fs.FlagUsages()) }
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
		out := newStarterOutput()
		return acquire(ctx, o, launcher.MPIR{Argv: fs.Args(), Starter: *starter, Lines: out.line}, f, dl, out, *starter)
	}
	progress := newProgress(isTerminal(os.Stderr))
	o.Progress = func(p launcher.Progress) {
		sayUsing(p)
		progress.show(p)
	}
	s, err := launcher.Launch(ctx, o)
	progress.clear()
	if err != nil {
		if ended := endedBy(ctx, nil); ended != nil {
			return ended // the launch cut short: its job is gone
		}
		return refused(err)
	}
	load := func(ctx context.Context, s *launcher.Session) error {
		return startProgram(ctx, s, *f.timeout, fs.Args(), dir)
	}
	return runSession(ctx, launched(s, load, progress.clear), f, console.Options{}, func(*console.Console) error {
		if err := applyDlopen(ctx, s, dl, *f.timeout); err != nil {
			return err
		}
		return load(ctx, s)
	})
}

// sayUsing says which resource manager starts the job and why, when sdm
// chose it or added to what the user said.
func sayUsing(p launcher.Progress) {
	if p.Stage == launcher.StageUsing && p.Why != "" {
		fmt.Fprintln(os.Stderr, "sdm: using", p.Text)
	}
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

// session is what runSession drives: the tree the commands go to, how
// the session ends, what to watch while it runs, and how restart starts
// the job again (or says why it cannot).
type session struct {
	tree    console.Tree
	end     func(time.Duration) error
	watch   func(ending <-chan struct{})
	restart console.Restarter
}

// runSession runs the commands of a session that came up, after prepare,
// ends it and says how it went in the exit status.
func runSession(ctx context.Context, s session, f *sessionFlags, opts console.Options, prepare func(*console.Console) error) error {
	opts.JSON, opts.Timeout, opts.Restart = *f.jsonOut, *f.timeout, s.restart
	opts.Color = !*f.jsonOut && isTerminal(os.Stdout) && os.Getenv("NO_COLOR") == ""
	con := console.New(s.tree, os.Stdout, opts)
	printed := make(chan struct{})
	go func() {
		defer close(printed)
		con.PrintEvents(ctx)
	}()
	ending := make(chan struct{})
	if s.watch != nil {
		go s.watch(ending)
	}

	// The commands run apart, so that sdm's end (ctx) ends the session
	// even while they wait for input that may never come.
	ran := make(chan error, 1)
	go func() {
		err := prepare(con)
		if err == nil {
			err = runCommands(ctx, con, *f.exprs, *f.batch)
		}
		ran <- err
	}()
	var runErr error
	select {
	case runErr = <-ran:
	case <-ctx.Done():
	}
	close(ending)
	endErr := s.end(10 * time.Second)
	if err := endedBy(ctx, endErr); err != nil {
		return err
	}
	// The session is closed now: what events remain are printed, then the
	// event channel closes.
	<-printed
	switch {
	case endErr != nil:
		return errors.Join(quiet(runErr), endErr)
	case errors.Is(runErr, console.ErrQuit) || runErr == nil:
		if con.Failed() {
			return &exitError{1, errors.New("some ranks answered with errors, or still ran when a wait ended (above)")}
		}
		return nil
	case errors.Is(runErr, console.ErrScriptErrors):
		return &exitError{2, runErr}
	}
	return runErr
}

// quiet drops the errors that only say how the commands ended.
func quiet(err error) error {
	if errors.Is(err, console.ErrQuit) || errors.Is(err, console.ErrScriptErrors) {
		return nil
	}
	return err
}

// watchJob says so when the job's launcher (or, for a job acquired
// through MPIR, its starter) ends before the session does: the servers
// may go on (the tree does not depend on it), or be gone.
func watchJob(s *launcher.Session, ending <-chan struct{}) {
	job, what := s.Job, "the job's launcher"
	if s.Starter != nil {
		job, what = s.Starter, "the job's starter"
	}
	if job == nil {
		return // the job runs elsewhere (reverse connect)
	}
	select {
	case <-job.Done():
		if err := job.Wait(); err != nil {
			fmt.Fprintf(os.Stderr, "sdm: %s ended: %v\n", what, err)
		} else {
			fmt.Fprintf(os.Stderr, "sdm: %s ended\n", what)
		}
	case <-ending:
	}
}

// startProgram has every rank load the program, to run in dir, and fails,
// naming the ranks, if any cannot.
func startProgram(ctx context.Context, s *launcher.Session, timeout time.Duration, argv []string, dir string) error {
	body, err := wire.Encode(wire.Start{Program: argv[0], Args: argv[1:], Dir: dir})
	if err != nil {
		return err
	}
	groups, err := s.Command(ctx, wire.All(s.Size()), wire.OpStart, body, timeout)
	if err != nil {
		return fmt.Errorf("start %s: %w", argv[0], err)
	}
	var errs []error
	for _, g := range groups {
		if g.Status != wire.StatusOK {
			errs = append(errs, fmt.Errorf("ranks %v could not start %s: %s: %s", g.Ranks, argv[0], g.Status, g.Body))
		}
	}
	return errors.Join(errs...)
}

// runCommands runs -e commands and the batch file, or else the terminal.
// A command typed wrong is reported and the rest still run.
func runCommands(ctx context.Context, con *console.Console, exprs []string, batch string) error {
	complain := func(err error) { fmt.Fprintln(os.Stderr, "sdm:", err) }
	var failed error
	if len(exprs) > 0 {
		err := con.RunScript(ctx, strings.NewReader(strings.Join(exprs, "\n")), "-e", complain)
		if err != nil && !errors.Is(err, console.ErrScriptErrors) {
			return err
		}
		failed = err
	}
	if batch != "" {
		f, err := os.Open(batch)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := con.RunScript(ctx, f, batch, complain); err != nil {
			return err
		}
	}
	if len(exprs) > 0 || batch != "" {
		return failed
	}
	return interactive(ctx, con)
}
