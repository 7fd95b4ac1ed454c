// Package backend defines what a rank server needs from a debugger: run a
// command for its rank and report what happens on its own. The tree node
// (package sdm) drives one Backend per rank; implementations live in the
// subpackages (gdbmi for real programs, sim for scale tests).
//
// Commands enter through Do as an op name and a msgpack body; Decode turns
// them, once, into a call of the typed method of Ops that runs the op (the
// table of ops, with their body and answer types, is package op). Answers
// leave as msgpack bodies, asynchronous news leaves through Events: each
// an event of op.Events, its body encoded as the event's entry says.
//
// bind, bare and void in ops.go tie each entry of the table to its method,
// so a method whose types do not match its entry does not compile. A
// backend that leaves ops out embeds Unsupported, which answers them with
// ErrUnsupported naming the op and the backend (the simulator does); an op
// not in the table is ErrUnknownOp.
//
// compare (wire.OpCompare) is answered by every backend that evaluates
// expressions (compare.go, through Ops.Evaluate): the rank's value as gdb
// prints it becomes a summary of one rank (Summarize: a number, an array
// of numbers, or another value), which the tree merges (op.Summaries).
package backend

import (
	"context"
	"errors"
)

// Config is what every backend learns about its rank when it is created.
type Config struct {
	Rank int    // this server's rank
	Size int    // number of ranks in the job
	Path string // the debugger executable, where the backend runs one
}

// Event is something that happened to the rank's process without being
// asked: a stop, an exit, a line of output.
type Event struct {
	Op   string // the event's name in the op table (op.Events)
	Body []byte // the event's body, as its entry there encodes it
	// Sent, when not nil, is called once the node has passed the event
	// on to its parent. A backend bounds the program output it has in
	// flight with it, and stops reading the program's output while the
	// tree above is full: the program then blocks in its writes, as on a
	// slow terminal.
	Sent func()
}

// Backend debugs the process of one rank.
//
// Do starts a command and returns at once; done is called exactly once, from
// any goroutine, with the answer. The node calls Do in the order commands
// arrived, so a backend that must keep that order (a debugger that reads
// its commands one after the other does) can, while a backend able to work
// on several at once lets a slow command overtake no one. Events is closed
// after Close returns.
type Backend interface {
	Do(ctx context.Context, op string, body []byte, done func(answer []byte, err error))
	Events() <-chan Event
	Close() error
}

// ErrUnknownOp is returned by Do for an op that is not in the table.
var ErrUnknownOp = errors.New("unknown command")
