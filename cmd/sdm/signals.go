package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

// endContext returns a context that sdm's end cancels, with a
// signalError as its cause: SIGTERM (timeout, a batch system), SIGHUP (a
// closed terminal), and SIGINT unless the console reads a terminal,
// where ^C interrupts a command instead. Whatever the session started is
// then ended before sdm exits; the stop function releases the signals.
func endContext(f *sessionFlags) (context.Context, func()) {
	sigs := []os.Signal{syscall.SIGTERM, syscall.SIGHUP}
	if !isTerminal(os.Stdin) || len(*f.exprs) > 0 || *f.batch != "" {
		sigs = append(sigs, syscall.SIGINT)
	}
	return signalled(sigs...)
}

// signalled returns a context that any of sigs cancels, with a
// signalError as its cause; the stop function releases the signals.
func signalled(sigs ...os.Signal) (context.Context, func()) {
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

// endedBy turns the end of a session that a signal cut short into the
// exit status of a process killed by it (128 + the signal's number),
// saying that the job ended with it; nil when no signal came.
func endedBy(ctx context.Context, endErr error) error {
	var sig signalError
	if !errors.As(context.Cause(ctx), &sig) {
		return nil
	}
	msg := fmt.Sprintf("%v: the session's job ended", sig.s)
	if endErr != nil {
		msg = fmt.Sprintf("%v: ending the session's job: %v", sig.s, endErr)
	}
	return &exitError{128 + int(sig.s), errors.New(msg)}
}
