package launcher

import (
	"context"
	"io"
	"log"

	"github.com/sdm-hpc/sdm/backend"
	"github.com/sdm-hpc/sdm/connect"
	"github.com/sdm-hpc/sdm/console"
	"github.com/sdm-hpc/sdm/dlopen"
	"github.com/sdm-hpc/sdm/wire"
)

// Front is the front end of a session as sdm debug, attach and listen run
// it: how the job coming up is told, the console's settings and commands,
// and the dlopen setting every rank gets.
type Front struct {
	Out      io.Writer // the console's output
	Errors   io.Writer // the progress line
	Terminal bool      // Errors is a terminal: the progress line is redrawn
	Log      *log.Logger
	Console  console.Options
	Commands console.Commands
	Dlopen   dlopen.Setting
	// Ended, when set, is the error of a session that ctx cut short
	// (console.Session.Ended); nil when ctx did not.
	Ended func(ctx context.Context, endErr error) error
}

// narrator tells how a job comes up; starter says the starter it starts.
func (f Front) narrator(starter bool) *Narrator {
	return &Narrator{ProgressLine: NewProgressLine(f.Errors, f.Terminal), Log: f.Log, Starter: starter}
}

// Debug starts the job o describes, loads program in every rank, and runs
// the session's commands. A launch that ctx cut short ends as Ended says.
func (f Front) Debug(ctx context.Context, o Options, program []string) error {
	o = f.withGDB(o)
	progress := f.narrator(false)
	o.Progress = progress.Step
	s, err := Launch(ctx, o)
	progress.Clear()
	if err != nil {
		if f.Ended != nil {
			if ended := f.Ended(ctx, nil); ended != nil {
				return ended // the launch cut short: its job is gone
			}
		}
		return err
	}
	load := func(ctx context.Context, s *Session) error {
		return s.Load(ctx, program, nil, o.Dir, o.Queues, f.Console.Timeout)
	}
	return f.run(ctx, f.launched(s, load, progress.Clear), f.Console, func(*console.Console) error {
		if err := f.setDlopen(ctx, s); err != nil {
			return err
		}
		return load(ctx, s)
	})
}

// Acquire takes over a job through MPIR and runs the session's commands.
// The libraries loaded when the ranks are attached are all read; the
// dlopen setting applies to the loads after. out, when set, is the output
// of a starter that Acquire starts, which sayStarter names.
func (f Front) Acquire(ctx context.Context, o Options, m MPIR, out *StarterOutput, sayStarter bool) error {
	o = f.withGDB(o)
	progress := f.narrator(sayStarter)
	o.Progress = progress.Step
	s, acquired, err := Acquire(ctx, o, m)
	progress.Clear()
	if err != nil {
		return err
	}
	opts := f.Console
	opts.Focus = acquired.Ranks
	// A running job stays when the session ends: a closer look at some
	// of its ranks is another sdm attach through its starter.
	opts.Attach = acquired.Again
	return f.run(ctx, f.launched(s, nil, progress.Clear), opts, func(con *console.Console) error {
		if out != nil {
			out.To(con.Output, s.Session)
		}
		con.PrintAnswers(wire.OpAttach, acquired.Answers)
		return f.setDlopen(ctx, s)
	})
}

// withGDB has every rank's gdb start at once when the session's dlopen
// setting reports library loads, which only gdb sees; a lazy server would
// run the program past them unseen.
func (f Front) withGDB(o Options) Options {
	if o.GDB == backend.Lazy && o.Debugger == backend.GDB && f.Dlopen.ReportsLoads() {
		o.GDB = backend.Eager
		if f.Log != nil {
			f.Log.Printf("--dlopen-mode %s reports library loads, which gdb sees: every rank's gdb starts at once (--gdb eager)", f.Dlopen)
		}
	}
	return o
}

// Take accepts r and runs the session's commands on its job, and on the
// jobs that l takes on meanwhile.
func (f Front) Take(ctx context.Context, l *Listener, r *connect.Request) error {
	s, attached, err := l.Take(ctx, r)
	if err != nil {
		return err
	}
	jobs := l.NewJobs(ctx, s, r)
	opts := f.Console
	opts.Jobs = jobs
	return f.run(ctx, console.Session{Tree: jobs.Tree(), End: jobs.End, Restart: jobs}, opts, func(con *console.Console) error {
		jobs.OnJoin = func(sets []JobSet, attached []wire.Group) {
			for _, set := range sets {
				con.Define(set.Name, set.Ranks)
			}
			if attached != nil {
				con.PrintAnswers(wire.OpAttach, attached)
			}
		}
		if attached != nil {
			con.PrintAnswers(wire.OpAttach, attached)
		}
		return nil
	})
}

// Serve takes the requests that pick accepts into sessions (Take), at
// most max of them (0: no limit). With the console's ProgramStatus, the
// session whose program ended worst gives the error.
func (f Front) Serve(ctx context.Context, l *Listener, max int, pick func(*connect.Request) (bool, error)) error {
	var program error
	err := l.Serve(ctx, max, pick, func(ctx context.Context, r *connect.Request) error {
		err := f.Take(ctx, l, r)
		program = console.WorseExit(program, err)
		return err
	})
	if program != nil {
		return program
	}
	return err
}

// Listener is a listener for the session's jobs: their progress on the
// progress line, their dlopen setting the session's.
func (f Front) Listener(l Listener) *Listener {
	progress := NewProgressLine(f.Errors, f.Terminal)
	l.Timeout, l.Dlopen, l.Log = f.Console.Timeout, f.Dlopen, f.Log
	l.Progress, l.Settled = progress.Show, progress.Clear
	return &l
}

// run runs the commands of a session that came up, after prepare, and
// ends it.
func (f Front) run(ctx context.Context, s console.Session, opts console.Options, prepare func(*console.Console) error) error {
	s.Ended = f.Ended
	return s.Run(ctx, f.Out, opts, f.Commands, prepare)
}

// launched is the session of a job started or taken over; load, when set,
// loads the program in a job started again.
func (f Front) launched(s *Session, load func(context.Context, *Session) error, settle func()) console.Session {
	r := NewRelaunchable(s, load, settle, f.Log)
	return console.Session{Tree: r.Tree(), End: r.End, Watch: r.Watch, Restart: r}
}

// setDlopen gives every rank the dlopen setting and logs what they warn
// about.
func (f Front) setDlopen(ctx context.Context, s *Session) error {
	return s.applyDlopen(ctx, f.Dlopen, f.Console.Timeout, f.Log)
}
