package hold

import (
	"os"
	"os/signal"
	"syscall"
)

// subscribe has wake signalled at every SIGCHLD until the returned
// function is called: the kernel tells a tracer of its tracees' stops by
// SIGCHLD, to the tracer's process, and every tracer of the process then
// reads what is its own (a wait limited to its thread).
func subscribe(wake chan os.Signal) func() {
	signal.Notify(wake, syscall.SIGCHLD)
	return func() { signal.Stop(wake) }
}
