package gdbmi

import "context"

// conn is the gdb a Backend drives: a gdb of its own (GDB), or its
// rank's share of a host's gdb (a view of a Host), which answers as a gdb
// of its own would.
type conn interface {
	// Run sends an MI command and waits for its result (GDB.Run).
	Run(ctx context.Context, command string) (Record, string, error)
	// Async delivers the asynchronous records of the rank's process,
	// and is closed when the gdb has ended.
	Async() <-chan Record
	// Handled, Mark and WaitHandled count the records acted on (GDB).
	Handled()
	Mark() uint64
	WaitHandled(ctx context.Context, n uint64) bool
	// Done is closed when the gdb has ended (for the rank); Err says why.
	Done() <-chan struct{}
	Err() error
	// Ended tells at once that the gdb's process has ended.
	Ended() bool
	// Close lets the gdb go: it ends, killing what it started and
	// letting go of what it attached to. Kill ends it at once.
	Close() error
	Kill()
}

var _ conn = (*GDB)(nil)
