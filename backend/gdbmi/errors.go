package gdbmi

import (
	"errors"
	"strings"
)

// The refusals of gdb the backend acts on. gdb's ^error record carries
// only a message (its code field names nothing but undefined commands), so
// the message is read once, here, where it arrives; everywhere else a
// refusal is told apart with errors.Is.
var (
	// ErrNoSymbol: an expression names a symbol the program does not have.
	ErrNoSymbol = errors.New("no such symbol")
	// ErrRunning: the command needs a stopped thread and the selected one
	// runs (the user's own continue came first, say).
	ErrRunning = errors.New("the thread is running")
	// ErrNoSource: a location names a source file that gdb knows in none
	// of the symbols it has read. (A program without any says "No symbol
	// table is loaded", ErrNoSymbol.)
	ErrNoSource = errors.New("no such source file")
)

// refusals maps what gdb's messages say to the sentinels above.
var refusals = []struct {
	text string
	err  error
}{
	{"No source file named", ErrNoSource},
	{"No symbol", ErrNoSymbol},
	{"running", ErrRunning},
}

// Refusal is gdb's answer ^error to a command: its message as gdb wrote
// it, and what it means where the backend acts on it (Is).
type Refusal struct {
	Msg  string
	kind error // one of the sentinels above, or nil
}

func newRefusal(msg string) *Refusal {
	r := &Refusal{Msg: msg}
	for _, k := range refusals {
		if strings.Contains(msg, k.text) {
			r.kind = k.err
			break
		}
	}
	return r
}

func (r *Refusal) Error() string { return r.Msg }

// Is says whether gdb refused for the reason target names.
func (r *Refusal) Is(target error) bool { return r.kind != nil && r.kind == target }
