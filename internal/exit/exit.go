// Package exit carries a command's exit status in its error, and ends a
// command's context when a signal comes, with the signal as the cause, so
// that a front end ends whatever it started and then exits as a process
// killed by that signal would (128 + the signal's number).
//
// What enters: errors, signals. What leaves: exit statuses, contexts
// cancelled with a cause that Signal reads.
package exit

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

// Error is an error with the exit status it ends the command with. An
// empty Err ends it without a word.
type Error struct {
	Code int
	Err  error
}

func (e *Error) Error() string {
	if e.Err == nil {
		return ""
	}
	return e.Err.Error()
}

// Usage is err as a usage error: exit status 2.
func Usage(err error) error { return &Error{2, err} }

// Status is the exit status that err ends a command with: 0 for nil, an
// Error's code, else 1.
func Status(err error) int {
	if err == nil {
		return 0
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return 1
}

// signalError is the cause of a context that a signal ended.
type signalError struct{ s syscall.Signal }

func (e signalError) Error() string { return e.s.String() }

// Signalled returns a context that any of sigs cancels, with the signal
// as its cause (Signal); the stop function releases the signals.
func Signalled(sigs ...os.Signal) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(context.Background())
	caught := make(chan os.Signal, 1)
	signal.Notify(caught, sigs...)
	done := make(chan struct{})
	go func() {
		select {
		case sig := <-caught:
			cancel(signalError{sig.(syscall.Signal)})
		case <-done:
		}
	}()
	return ctx, func() {
		signal.Stop(caught)
		close(done)
		cancel(nil)
	}
}

// SignalledTwice is Signalled for work that ends gently: the first of
// sigs is handed to first, which asks the work to end; a second signal
// cancels the context, as Signalled's first does.
func SignalledTwice(first func(os.Signal), sigs ...os.Signal) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(context.Background())
	caught := make(chan os.Signal, 2)
	signal.Notify(caught, sigs...)
	done := make(chan struct{})
	go func() {
		told := false
		for {
			select {
			case sig := <-caught:
				if !told {
					told = true
					first(sig)
					continue
				}
				cancel(signalError{sig.(syscall.Signal)})
				return
			case <-done:
				return
			}
		}
	}()
	return ctx, func() {
		signal.Stop(caught)
		close(done)
		cancel(nil)
	}
}

// Signal is the signal that ended ctx, if one did (Signalled).
func Signal(ctx context.Context) (syscall.Signal, bool) {
	var sig signalError
	if !errors.As(context.Cause(ctx), &sig) {
		return 0, false
	}
	return sig.s, true
}

// Killed is the exit status of a process killed by sig, with err.
func Killed(sig syscall.Signal, err error) error { return &Error{128 + int(sig), err} }

// EndedBy turns the end of a session that a signal cut short into the
// exit status of a process killed by it, saying that the job ended with
// it (and how ending it failed, endErr); nil when no signal came.
func EndedBy(ctx context.Context, endErr error) error {
	sig, ok := Signal(ctx)
	if !ok {
		return nil
	}
	msg := fmt.Sprintf("%s: ended the session's job", Name(sig))
	if endErr != nil {
		msg = fmt.Sprintf("%s: ending the session's job: %v", Name(sig), endErr)
	}
	return Killed(sig, errors.New(msg))
}

// Name says what a signal is, in words and by its name: "terminated
// (SIGTERM)".
func Name(sig syscall.Signal) string {
	if name, ok := names[sig]; ok {
		return fmt.Sprintf("%v (%s)", sig, name)
	}
	return sig.String()
}

// names are the signals that end a session: those sdm catches, and those
// people send by hand.
var names = map[syscall.Signal]string{
	syscall.SIGTERM: "SIGTERM", syscall.SIGHUP: "SIGHUP", syscall.SIGINT: "SIGINT",
	syscall.SIGQUIT: "SIGQUIT", syscall.SIGUSR1: "SIGUSR1", syscall.SIGUSR2: "SIGUSR2",
}

// Quiet is the error of a command that ctx ended as none: being told to
// stop is not a failure.
func Quiet(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return nil
	}
	return err
}
