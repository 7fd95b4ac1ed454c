package console

import (
	"context"
	"errors"
	"io"
	"time"
)

// Session is a session the console drives: the tree the commands go to,
// how the session ends, what to watch while it runs, and how restart
// starts the job again (or says why it cannot).
type Session struct {
	Tree    Tree
	End     func(time.Duration) error
	Watch   func(ending <-chan struct{})
	Restart Restarter
	// Ended, when set, is the error of a session that ctx cut short, given
	// the error of its end; nil when ctx did not. The events left are then
	// not waited for.
	Ended func(ctx context.Context, endErr error) error
}

// ErrRanksFailed is a session whose commands all ran while some ranks
// answered with errors.
var ErrRanksFailed = errors.New("some ranks answered with errors, or still ran when a wait ended (above)")

// endWithin bounds the end of a session.
const endWithin = 10 * time.Second

// Run prints to out what the session's commands answer, after prepare,
// until they end or ctx does; then it ends the session. The error says
// how it went: ErrScriptErrors for commands typed wrong, ErrRanksFailed
// for answers that were errors.
func (s Session) Run(ctx context.Context, out io.Writer, opts Options, cmds Commands, prepare func(*Console) error) error {
	opts.Restart = s.Restart
	con := New(s.Tree, out, opts)
	printed := make(chan struct{})
	go func() {
		defer close(printed)
		con.PrintEvents(ctx)
	}()
	ending := make(chan struct{})
	if s.Watch != nil {
		go s.Watch(ending)
	}
	// The commands run apart, so that ctx ends the session even while
	// they wait for input that may never come.
	ran := make(chan error, 1)
	go func() {
		err := prepare(con)
		if err == nil {
			err = cmds.run(ctx, con)
		}
		ran <- err
	}()
	var runErr error
	select {
	case runErr = <-ran:
	case <-ctx.Done():
	}
	close(ending)
	endErr := s.End(endWithin)
	if s.Ended != nil {
		if err := s.Ended(ctx, endErr); err != nil {
			return err
		}
	}
	// The session is closed now: what events remain are printed, then the
	// event channel closes.
	<-printed
	return sessionError(con, runErr, endErr)
}

// sessionError is the error of a session whose commands ended with runErr and
// whose end with endErr; with Options.ProgramStatus, of a session that
// ran its commands, the program's end. Every command of the session
// counts, those before a quit too: a command typed wrong makes it
// ErrScriptErrors, a failure of some rank ErrRanksFailed.
func sessionError(con *Console, runErr, endErr error) error {
	switch {
	case endErr != nil:
		return errors.Join(quiet(runErr), endErr)
	case runErr != nil && quiet(runErr) != nil:
		return runErr
	case con.Mistyped():
		return ErrScriptErrors
	case con.opts.ProgramStatus:
		return con.programExit()
	case con.Failed():
		return ErrRanksFailed
	}
	return nil
}

// quiet drops the errors that only say how the commands ended.
func quiet(err error) error {
	if errors.Is(err, ErrQuit) || errors.Is(err, ErrScriptErrors) {
		return nil
	}
	return err
}
