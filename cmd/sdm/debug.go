package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/pflag"
	"golang.org/x/sys/unix"

	"github.com/sdm-hpc/sdm/console"
	"github.com/sdm-hpc/sdm/launcher"
	"github.com/sdm-hpc/sdm/wire"
)

const debugUsage = `usage: sdm debug [flags] -- PROGRAM [ARGS...]

Starts PROGRAM as an N-rank job with a debug server (and a gdb) beside every
rank, waits until all have joined the tree, loads the program, and runs
debugger commands on any set of ranks. Commands come from -e (in order),
then --batch FILE; without either, from the terminal. Each answer is printed
once per distinct value, with the ranks that gave it first:

  [0-6] stopped in MPI_Recv at recv.c:64 (breakpoint 1)
  [7] stopped in compute at hang.c:15 (SIGINT)

examples:
  sdm debug -n 8 -- ./plain                                   # interactive
  sdm debug -n 8 -e 'break compute' -e run -e wait -e 'print value' -- ./plain
  sdm debug -n 16 --json --batch cmds.txt -- ./plain 5
  sdm debug -n 64 --backend sim -e stacks -- hang              # no gdb: simulated stacks

Every command may start with a rank set ([0-3,7], [all]); type help for the
list: run, continue, next, step, finish, halt, kill, wait, status, break,
tbreak, watch, delete, enable, disable, condition, ignore, breakpoints,
where, stacks, frame, print, ptype, locals, args, globals, threads, thread,
x, poke, signals, handle, gdb, focus, quit.

A command typed wrong is reported on one line and the rest go on; the exit
status is 0 when everything ran, 1 when something failed, 2 for bad flags.

flags:
%s`

func runDebug(args []string) error {
	fs := pflag.NewFlagSet("sdm debug", pflag.ContinueOnError)
	rmName := fs.String("rm", "local", "resource manager that starts the job: local (this machine), openmpi (mpirun), mpich (mpiexec), slurm (srun), pe (poe), or auto")
	launcherPath := fs.String("launcher", "", "the resource manager's launcher program, instead of the one in $PATH (such as /opt/ompi/bin/mpirun)")
	var launcherArgs []string
	fs.StringArrayVar(&launcherArgs, "launcher-arg", nil, "an argument for the launcher, before the server command (repeatable; such as --launcher-arg=--oversubscribe)")
	size := fs.IntP("np", "n", 1, "number of ranks")
	backendName := fs.String("backend", "gdb", "debugger behind every rank: gdb, or sim (no real program: simulated stacks named ring, hang or groups K)")
	batch := fs.String("batch", "", "run the commands in FILE, then quit")
	var exprs []string
	fs.StringArrayVarP(&exprs, "eval", "e", nil, "run this command (repeatable), then quit")
	jsonOut := fs.Bool("json", false, "print one JSON object per line instead of text")
	fanout := fs.Int("fanout", 0, "tree shape: 0 for a binomial tree, K >= 2 for a K-ary tree")
	timeout := fs.Duration("timeout", 30*time.Second, "how long a command waits for its ranks")
	connect := fs.Duration("connect-timeout", 60*time.Second, "how long to wait for every rank's server to join")
	fs.Usage = func() { fmt.Fprintf(os.Stderr, debugUsage, fs.FlagUsages()) }
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return nil
		}
		return &exitError{2, err}
	}
	if fs.NArg() == 0 {
		return &exitError{2, errors.New("sdm debug: no program given (sdm debug [flags] -- PROGRAM [ARGS...])")}
	}
	debugger, ok := map[string]string{"gdb": "gdb-mi", "gdb-mi": "gdb-mi", "sim": "sim"}[*backendName]
	if !ok {
		return &exitError{2, fmt.Errorf("--backend %s: want gdb or sim", *backendName)}
	}
	if *size < 1 {
		return &exitError{2, fmt.Errorf("-n %d: need at least one rank", *size)}
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	dir, _ := os.Getwd()
	s, err := launcher.Launch(ctx, launcher.Options{
		RM: *rmName, Size: *size, Fanout: *fanout, Debugger: debugger,
		Program: fs.Arg(0), Dir: dir, Launcher: *launcherPath, LauncherArgs: launcherArgs,
		ConnectTimeout: *connect, Log: log.New(os.Stderr, "sdm: ", 0),
	})
	if err != nil {
		return err
	}
	con := console.New(s.Session, os.Stdout, console.Options{JSON: *jsonOut, Timeout: *timeout})
	printed := make(chan struct{})
	go func() {
		defer close(printed)
		con.PrintEvents(ctx)
	}()

	runErr := startProgram(ctx, s, *timeout, fs.Args())
	if runErr == nil {
		runErr = runCommands(ctx, con, exprs, *batch)
	}
	if errors.Is(runErr, console.ErrQuit) {
		runErr = nil
	}
	if errors.Is(runErr, console.ErrScriptErrors) {
		runErr = &exitError{1, runErr}
	}
	endErr := s.End(10 * time.Second)
	// The session is closed now: what events remain are printed, then the
	// event channel closes.
	<-printed
	return errors.Join(runErr, endErr)
}

// startProgram has every rank start the program and fails, naming the
// ranks, if any cannot.
func startProgram(ctx context.Context, s *launcher.Session, timeout time.Duration, argv []string) error {
	dir, _ := os.Getwd()
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
// A command typed wrong is reported and the rest still run; the exit
// status then says that something was wrong.
func runCommands(ctx context.Context, con *console.Console, exprs []string, batch string) error {
	complain := func(err error) { fmt.Fprintln(os.Stderr, "sdm:", err) }
	var script strings.Builder
	for _, e := range exprs {
		script.WriteString(e + "\n")
	}
	if len(exprs) > 0 {
		err := con.RunScript(ctx, strings.NewReader(script.String()), "-e", complain)
		if err != nil && !errors.Is(err, console.ErrScriptErrors) {
			return err
		}
		if batch == "" {
			return err
		}
	}
	if batch != "" {
		f, err := os.Open(batch)
		if err != nil {
			return err
		}
		defer f.Close()
		return con.RunScript(ctx, f, batch, complain)
	}
	return interactive(ctx, con)
}

// interactive reads commands from standard input until quit or end of
// input; errors are shown and the session goes on.
func interactive(ctx context.Context, con *console.Console) error {
	_, err := unix.IoctlGetTermios(int(os.Stdin.Fd()), unix.TCGETS)
	tty := err == nil
	in := bufio.NewScanner(os.Stdin)
	for {
		if tty {
			fmt.Print("(sdm) ")
		}
		if !in.Scan() {
			return in.Err()
		}
		if err := con.Exec(ctx, in.Text()); err != nil {
			if errors.Is(err, console.ErrQuit) {
				return err
			}
			fmt.Fprintln(os.Stderr, "error:", err)
		}
	}
}
