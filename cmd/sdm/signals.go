package main

import (
	"context"
	"os"
	"syscall"

	"github.com/sdm-hpc/sdm/internal/exit"
)

// endContext returns a context that sdm's end cancels, with the signal as
// its cause: SIGTERM (timeout, a batch system), SIGHUP (a closed
// terminal), and SIGINT unless the console reads a terminal, where ^C
// interrupts a command instead. Whatever the session started is then
// ended before sdm exits; the stop function releases the signals.
func endContext(f *sessionFlags) (context.Context, func()) {
	sigs := []os.Signal{syscall.SIGTERM, syscall.SIGHUP}
	if cmds := f.front.Commands; !isTerminal(os.Stdin) || len(cmds.Exprs) > 0 || cmds.Batch != "" {
		sigs = append(sigs, syscall.SIGINT)
	}
	return exit.Signalled(sigs...)
}
