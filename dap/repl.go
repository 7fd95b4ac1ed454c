package dap

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"sync"

	"github.com/sdm-hpc/sdm/client"
	"github.com/sdm-hpc/sdm/console"
	"github.com/sdm-hpc/sdm/internal/fifo"
	"github.com/sdm-hpc/sdm/launcher"
)

// repl is the sdm console behind the editor's debug console: the lines
// it takes run as typed at sdm debug, and what the console prints
// between commands (merged stops, exits) goes to the client as output.
type repl struct {
	con    *console.Console
	events *fifo.Queue[client.Event]
	out    *replOut
}

// replTree is the job's tree as the console sees it: its events are
// those the adapter's pump hands on.
type replTree struct {
	*launcher.Session
	events *fifo.Queue[client.Event]
}

func (t replTree) NextEvent(ctx context.Context) (client.Event, error) { return t.events.Pop(ctx) }

func newRepl(a *adapter, j *job) *repl {
	r := &repl{events: fifo.New[client.Event](), out: &replOut{send: func(s string) { a.output("console", s) }}}
	opts := console.Options{Timeout: a.opts.Timeout, Focus: j.ranks}
	r.con = console.New(replTree{Session: j.s, events: r.events}, r.out, opts)
	return r
}

// feed hands the console an event.
func (r *repl) feed(ev client.Event) { r.events.Push(ev) }

// close tells the console that no more events come.
func (r *repl) close() { r.events.Close() }

// takes says whether line is the console's (a command) rather than an
// expression.
func (r *repl) takes(line string) bool { return console.IsCommand(line) }

// exec runs a console command and returns what it printed.
func (r *repl) exec(ctx context.Context, line string) (string, error) {
	r.out.capture()
	err := r.con.Exec(ctx, line)
	text := r.out.release()
	if errors.Is(err, console.ErrQuit) {
		return text, errors.New("quit: end the session from the editor (stop, or disconnect)")
	}
	if err != nil && !strings.Contains(text, err.Error()) {
		text += err.Error() + "\n"
	}
	return strings.TrimRight(text, "\n"), nil
}

// replOut is where the console prints: the client's output, or, while a
// command runs, that command's answer.
type replOut struct {
	mu   sync.Mutex
	buf  *bytes.Buffer
	send func(string)
}

func (w *replOut) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.buf != nil {
		return w.buf.Write(p)
	}
	w.send(string(p))
	return len(p), nil
}

func (w *replOut) capture() {
	w.mu.Lock()
	w.buf = new(bytes.Buffer)
	w.mu.Unlock()
}

func (w *replOut) release() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	text := w.buf.String()
	w.buf = nil
	return text
}
