// Package console is the command line of the front end: it reads commands
// such as `[0-3] where`, sends them through a client.Session to the rank
// set given (or the focus set), and prints the merged answers and the
// events of the tree, as text (one line per distinct answer, rank set
// first) or as JSON (one object per line). Session.Run drives a whole
// session: its commands from -e, a batch file or the terminal, then its end.
//
// What enters: command lines (from -e, a batch file or the terminal) and
// the tree's news (client.Event). What leaves: commands to the tree through
// the Tree interface (a client.Session, or a fake in tests), each body
// encoded by its op's entry, and text or JSON on the console's writer,
// each answer and event printed by the printer of its entry.
package console

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/sdm-hpc/sdm/client"
	"github.com/sdm-hpc/sdm/wire"
)

// ErrQuit is returned by Exec for the quit command.
var ErrQuit = errors.New("quit")

// Options tune a Console.
type Options struct {
	JSON    bool          // print JSON objects instead of text
	Timeout time.Duration // how long a command waits for its ranks (default 30 s)
	Window  time.Duration // how long events are gathered to merge them (default 100 ms)
	Color   bool          // colour the text (for a terminal)
	// Focus is where commands without [SET] go at first (all ranks when
	// empty).
	Focus wire.RankSet
	// Jobs, when set, takes on new jobs for the listen command; without
	// it, listen says where it works.
	Jobs Jobs
	// Restart, when set, starts the job again for the restart command,
	// and says whether run may start a rank's program again alone.
	Restart Restarter
	// ProgramStatus makes a session that ran its commands end as its
	// program did (ProgramExit), for CI: errors of the ranks' answers
	// then count for nothing.
	ProgramStatus bool
	// LiveOutput prints the program's output at the end of its window
	// even while a wait holds the rest of the news: for a log that a
	// person tails while a long wait runs (sdm report).
	LiveOutput bool
	// Attach is how sdm attach names the running job the session
	// attached to ("--pid 4242", "--slurm 12.0"; "" for none): stacks
	// then suggests attaching gdb to one rank per class through it.
	Attach string
}

// Restarter starts a session's job again through its launcher.
type Restarter interface {
	// Launcher names the program that started the ranks as one job
	// (mpirun, mpiexec, srun, poe, or a starter acquired through MPIR),
	// whose ranks cannot be run again alone; "" when each rank's program
	// can (gdb runs it again).
	Launcher() string
	// Restartable is nil when Restart can start the job again, or says
	// why not and what to do instead.
	Restartable() error
	// Restart ends the job and starts it again as it was started, the
	// program loaded in every rank but not running; the console's tree
	// then drives the new job. It says what it started ("4 ranks under
	// mpirun").
	Restart(ctx context.Context) (string, error)
}

// Jobs takes on jobs that ask to be debugged while a session runs.
type Jobs interface {
	// Listen turns the taking on of new jobs on or off.
	Listen(on bool) error
	// Wait returns once the session holds n jobs, or ctx ends.
	Wait(ctx context.Context, n int) error
}

// Tree is what a console drives: one job's client.Session, or the jobs of
// a client.Joined.
type Tree interface {
	Size() int
	NextEvent(ctx context.Context) (client.Event, error)
	Done() <-chan struct{}
	Command(ctx context.Context, ranks wire.RankSet, op string, body []byte, timeout time.Duration) ([]wire.Group, error)
}

// DefaultWindow is the default Options.Window: PTP's aggregation window.
const DefaultWindow = 100 * time.Millisecond

// Console runs commands against a tree and prints what comes back.
type Console struct {
	s    Tree
	opts Options

	mu          sync.Mutex // one printed line at a time
	out         io.Writer
	changed     chan struct{} // closed at news that may end a wait
	syncReq     context.Context
	requestSync context.CancelFunc // asks the printer to print what it has
	syncDone    chan struct{}      // closed when it has
	holds       int                // waits in progress: events are held for them
	focus       wire.RankSet
	sets        map[string]wire.RankSet // named rank sets (defset)
	failed      bool                    // some rank answered some command with a failure
	mistyped    bool                    // some command was typed wrong
	ran         wire.RankSet            // ranks the user ran since the job (re)started
	losses      map[string]wire.RankSet // ranks reported lost, by cause (losses.go)
	began       time.Time               // when the command that runs began
	// verboseLoads: the text prints reported loads (set verbose loads).
	verboseLoads bool
	displays     displays // shown at every stop (display.go)
	// ask puts a yes-or-no question to the user at the terminal; nil in
	// a script, whose commands go ahead without asking.
	ask func(question string) bool
	// prompt is the prompt the terminal shows while it waits for a line,
	// "" while a command runs: news printed meanwhile clears the line
	// first and shows the prompt again after it.
	prompt string
	known  *wire.Symbols // the program's functions and files, for completion
	seq    int           // the number of the last reply (reply.go)
	open   *reply        // the reply of the command that runs, under --json
	causes []cause       // which command set which ranks going
	at     string        // the script and line of the command that runs ("-e:3")
	exits  exits         // how the ranks' programs ended (exits.go)
}

// New returns a console on s printing to out, focused on opts.Focus.
func New(s Tree, out io.Writer, opts Options) *Console {
	if opts.Timeout <= 0 {
		opts.Timeout = 30 * time.Second
	}
	if opts.Window <= 0 {
		opts.Window = DefaultWindow
	}
	c := &Console{opts: opts, out: out, focus: wire.All(s.Size()), changed: make(chan struct{}),
		syncDone: make(chan struct{}), sets: make(map[string]wire.RankSet)}
	c.s = recording{s, c}
	if !opts.Focus.Empty() {
		c.focus = opts.Focus
	}
	c.syncReq, c.requestSync = context.WithCancel(context.Background())
	return c
}

// PrintEvents prints the session's events until the session has ended and
// all were printed, or ctx is done. Events are gathered for a short window
// (Options.Window) after the first and merged, so that ranks which stop at
// the same place a few milliseconds apart, or print the same line, show as
// one line. The program output gathered is bounded (printLimit): a batch
// that holds that much prints before its window ends, or while a wait
// holds the news, its output does.
func (c *Console) PrintEvents(ctx context.Context) {
	var b batch
	var flushAt time.Time
	var liveAt time.Time // when output held by a wait prints (LiveOutput)
	for {
		var wait context.Context
		var cancel context.CancelFunc
		switch {
		case !b.empty() && !c.holding():
			wait, cancel = context.WithDeadline(ctx, flushAt)
		case !liveAt.IsZero() && c.holding():
			wait, cancel = context.WithDeadline(ctx, liveAt)
		default:
			wait, cancel = context.WithCancel(ctx)
		}
		// A sync request cuts the window short.
		stop := context.AfterFunc(c.syncCtx(), cancel)
		ev, err := c.s.NextEvent(wait)
		stop()
		cancel()
		if err != nil {
			if ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded) && c.holding() {
				if !liveAt.IsZero() {
					c.printEvents(b.takeOutput())
					liveAt = time.Time{}
				}
				continue // a wait began during the window: it decides when to print
			}
			if ctx.Err() == nil && errors.Is(err, context.Canceled) {
				c.drain(&b)
			}
			c.printEvents(b.take())
			liveAt = time.Time{}
			c.synced()
			if ctx.Err() == nil && (errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled)) {
				continue
			}
			return
		}
		c.announce(ev.Op)
		if !c.batched(ev) {
			continue
		}
		if b.empty() {
			flushAt = time.Now().Add(c.opts.Window)
		}
		b.add(ev)
		if ev.Op == wire.EventOutput && c.opts.LiveOutput && liveAt.IsZero() {
			liveAt = time.Now().Add(c.opts.Window)
		}
		if b.full() {
			c.printFull(&b)
		}
		// News that keeps coming (a flood of output) never lets
		// NextEvent see a sync request: it is looked for here too.
		if c.syncCtx().Err() != nil {
			c.drain(&b)
			c.printEvents(b.take())
			c.synced()
		}
	}
}

// printFull prints a batch that holds as much output as it may: all of
// it, or while a wait holds the news, its output.
func (c *Console) printFull(b *batch) {
	if c.holding() {
		c.printEvents(b.takeOutput())
	} else {
		c.printEvents(b.take())
	}
}

// hold keeps events from being printed until the matching release, so
// that a wait shows each distinct stop once, however far apart in time
// the ranks reached it.
func (c *Console) hold() {
	c.mu.Lock()
	c.holds++
	c.mu.Unlock()
}

func (c *Console) release() {
	c.mu.Lock()
	c.holds--
	c.mu.Unlock()
}

func (c *Console) holding() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.holds > 0
}

// outputFirst moves each piece of output ahead of the stops and exits of
// its ranks that arrived just before it. Output and events travel on
// separate streams so that a chatty program never delays a command, which
// lets a line the program printed before stopping overtake the stop; a
// stopped or exited process prints nothing, so the line belongs before it.
func outputFirst(batch []client.Event) []client.Event {
	for i := range batch {
		if batch[i].Op != wire.EventOutput {
			continue
		}
		to := -1
		for j := i - 1; j >= 0; j-- {
			if !batch[j].Group.Ranks.Intersects(batch[i].Group.Ranks) {
				continue // other ranks' news: its order against ours is unknown anyway
			}
			if op := batch[j].Op; op != wire.EventStopped && op != wire.EventExited {
				break
			}
			to = j
		}
		if to >= 0 {
			out := batch[i]
			copy(batch[to+1:i+1], batch[to:i])
			batch[to] = out
		}
	}
	return batch
}

// drain adds to b every event already received, printing as the output
// fills it; it stops after syncLimit of output, which is more than the
// front end holds: output that a flood brings meanwhile is not what the
// Sync waits for.
func (c *Console) drain(b *batch) {
	done, cancel := context.WithCancel(context.Background())
	cancel()
	for drained := 0; drained < syncLimit; {
		ev, err := c.s.NextEvent(done)
		if err != nil {
			return
		}
		if !c.batched(ev) {
			continue
		}
		if ev.Op == wire.EventOutput {
			drained += len(ev.Group.Body)
		}
		b.add(ev)
		if b.full() {
			c.printFull(b)
		}
	}
}

// batched reports whether ev goes into the batch to print. Connected is
// news of the tree, never printed. In text, running is never printed
// (printEvents) either: kept in the batch, it would keep the stops of
// ranks whose running news came in between from merging with those that
// stopped before.
func (c *Console) batched(ev client.Event) bool {
	return ev.Op != wire.EventConnected && (ev.Op != wire.EventRunning || c.opts.JSON)
}

// syncCtx returns a context cancelled when someone asks to sync.
func (c *Console) syncCtx() context.Context {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.syncReq
}

// synced tells those waiting in Sync that everything received before they
// asked has been printed.
func (c *Console) synced() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.syncReq.Err() != nil {
		c.syncReq, c.requestSync = context.WithCancel(context.Background())
		close(c.syncDone)
		c.syncDone = make(chan struct{})
	}
}

// Sync prints every event received so far, without waiting for the end of
// the merge window, and returns once it is printed (or the session ended).
// The answer to a command comes after the events that preceded it, so
// after an answer Sync shows everything that led to it.
func (c *Console) Sync(ctx context.Context) {
	c.mu.Lock()
	c.requestSync()
	done := c.syncDone
	c.mu.Unlock()
	select {
	case <-done:
	case <-c.s.Done():
	case <-ctx.Done():
	}
}

// outputBeforeEnd lets a stop or an exit merge past output of its ranks:
// outputFirst puts such output before it when printing.
func outputBeforeEnd(prev, item *client.Event) bool {
	return prev.Op == wire.EventOutput && (item.Op == wire.EventStopped || item.Op == wire.EventExited)
}

func eventRanks(e *client.Event) *wire.RankSet { return &e.Group.Ranks }

func sameEvent(a, b *client.Event) bool {
	return a.Op == b.Op && a.Group.Status == b.Group.Status && string(a.Group.Body) == string(b.Group.Body)
}

// printEvents prints a batch with one write, which a flood of output
// needs to keep up.
func (c *Console) printEvents(batch []client.Event) {
	if len(batch) == 0 {
		return
	}
	loads := c.opts.JSON || c.showsLoads()
	var text []byte
	var stopped wire.RankSet
	for _, ev := range outputFirst(batch) {
		if ev.Op == wire.EventStopped {
			stopped = stopped.Union(ev.Group.Ranks)
		}
		// In text, running is implied by the command just typed; the stop
		// that ends it is what people look for. Loads are news only to
		// whoever asked for them (set verbose loads on): an MPI start
		// reports tens, which would bury the stops. JSON has them all, for
		// programs that keep track of the libraries.
		if (ev.Op != wire.EventRunning || c.opts.JSON) && (ev.Op != wire.EventLoaded || loads) {
			text = c.appendEvent(text, ev)
		}
	}
	c.write(text)
	if !stopped.Empty() {
		ctx, cancel := context.WithTimeout(context.Background(), c.opts.Timeout)
		defer cancel()
		c.showDisplays(ctx, stopped, false)
	}
}

// RunScript executes the commands read from r, one per line; blank lines
// and lines starting with # are skipped. A command typed wrong (ErrUsage),
// a line longer than MaxLine among them, is reported to complain, naming
// name:line, and the script goes on; so does a wait, step, next or finish
// whose ranks still run at its deadline (it says which, and Failed
// tells). Any other failure ends the script. It returns ErrQuit after a
// quit, and ErrScriptErrors at the end of a script in which something was
// wrong.
func (c *Console) RunScript(ctx context.Context, r io.Reader, name string, complain func(error)) error {
	lines := newLines(r)
	failed := false
	var going heldNews
	defer going.end(ctx, c)
	for line := 1; lines.scan(); line++ {
		var err error
		c.at = fmt.Sprintf("%s:%d", name, line)
		if lines.n > MaxLine {
			going.end(ctx, c)
			err = tooLong(lines.n)
			c.count(err)
			c.end(c.begin(string(lines.text), nil, wire.RankSet{}, ""), err)
		} else {
			text := string(lines.text)
			name := c.commandName(text)
			if name != "wait" {
				going.end(ctx, c)
			}
			if setsGoing[name] {
				going.begin(c)
			}
			err = c.Exec(ctx, text)
			if !setsGoing[name] || err != nil {
				going.end(ctx, c)
			}
		}
		c.at = ""
		switch {
		case err == nil:
		case errors.Is(err, ErrQuit):
			return err
		case errors.Is(err, ErrUsage):
			failed = true
			if !c.opts.JSON { // the reply says it
				complain(fmt.Errorf("%s:%d: %w", name, line, err))
			}
		default:
			return fmt.Errorf("%s:%d: %w", name, line, err)
		}
	}
	if err := lines.err; err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	if failed {
		return ErrScriptErrors
	}
	return nil
}

// setsGoing are the commands that set ranks going without waiting for
// them: in a script, the news from the start of one is held until the
// next command, and through it when it is a wait, so that ranks that
// stop alike show as one line when the wait returns, however far apart
// in time they stopped, even before the wait began.
var setsGoing = map[string]bool{"run": true, "continue": true, "halt": true, "kill": true}

// heldNews is the news a script holds after a command of setsGoing.
type heldNews struct{ held bool }

func (h *heldNews) begin(c *Console) {
	c.hold()
	h.held = true
}

// end prints what was held.
func (h *heldNews) end(ctx context.Context, c *Console) {
	if !h.held {
		return
	}
	h.held = false
	c.release()
	c.Sync(ctx)
}

// commandName is the name of the command line calls (its entry's, not an
// alias), or "" for none or a line typed wrong.
func (c *Console) commandName(line string) string {
	cmd, _, _, err := c.parse(line)
	if err != nil || cmd == nil {
		return ""
	}
	return cmd.name
}

// ErrScriptErrors says that a script ran to its end but some of its
// commands were typed wrong.
var ErrScriptErrors = errors.New("some commands were not understood")

// Exec runs one command line. A command that ctx ends (a ^C) says what it
// left behind and returns ErrInterrupted. Under --json every line but a
// blank one or a comment gets one reply object, a mistake too.
func (c *Console) Exec(ctx context.Context, line string) error {
	cmd, ranks, args, err := c.parse(line)
	if err == nil && cmd == nil {
		return nil
	}
	r := c.begin(line, cmd, ranks, args)
	c.mu.Lock()
	c.began = time.Now()
	c.mu.Unlock()
	if err == nil {
		err = c.settle(ctx, cmd.name, ranks, cmd.run(ctx, c, ranks, args))
	}
	c.count(err)
	c.end(r, err)
	return err
}

// count records what a command's error means for the session's exit
// status: a command typed wrong, or one that failed. Quit and a ^C are
// the user's wish, not errors.
func (c *Console) count(err error) {
	if err == nil || errors.Is(err, ErrQuit) || errors.Is(err, ErrInterrupted) {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if errors.Is(err, ErrUsage) {
		c.mistyped = true
	} else {
		c.failed = true
	}
}

// Mistyped reports whether some command of the session was typed wrong.
func (c *Console) Mistyped() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.mistyped
}

// parse splits a command line, "[SET] command args", into the command,
// the ranks it goes to and its arguments; no command (nil) for a blank
// line or a comment. Every mistake is a usage error.
func (c *Console) parse(line string) (*command, wire.RankSet, string, error) {
	if len(line) > MaxLine {
		return nil, wire.RankSet{}, "", tooLong(len(line))
	}
	line = strings.TrimSpace(line)
	if line == "" || strings.HasPrefix(line, "#") {
		return nil, wire.RankSet{}, "", nil
	}
	ranks, rest, err := c.prefix(line)
	if err != nil {
		return nil, wire.RankSet{}, "", err
	}
	rest = strings.TrimSpace(rest)
	name, args, _ := strings.Cut(rest, " ")
	if name == "" {
		return nil, wire.RankSet{}, "", usageError("%q: a rank set needs a command after it", line)
	}
	cmd, err := lookup(name)
	if err != nil {
		return nil, wire.RankSet{}, "", err
	}
	return cmd, ranks, strings.TrimSpace(args), nil
}

// prefix splits an optional leading [SET] off line; without one the focus
// set applies.
func (c *Console) prefix(line string) (wire.RankSet, string, error) {
	if !strings.HasPrefix(line, "[") {
		return c.focus, line, nil
	}
	end := strings.IndexByte(line, ']')
	if end < 0 {
		return wire.RankSet{}, "", usageError("%q: rank set has no closing ]", line)
	}
	ranks, err := c.parseSet(line[1:end])
	return ranks, line[end+1:], err
}

// sendQuiet runs op on ranks and prints only the answers that failed.
func (c *Console) sendQuiet(ctx context.Context, ranks wire.RankSet, op string, body []byte) error {
	groups, err := c.s.Command(ctx, ranks, op, body, c.opts.Timeout)
	groups, gones := c.goneOf(ctx, op, groups)
	for _, g := range groups {
		if g.Status != wire.StatusOK {
			c.printReply(op, "", g)
		} else {
			c.answered(op, g)
		}
	}
	c.printGone(op, gones)
	return err
}

// send runs op on ranks and prints every answer.
func (c *Console) send(ctx context.Context, ranks wire.RankSet, op string, body []byte) ([]wire.Group, error) {
	return c.sendLabelled(ctx, ranks, op, body, "")
}

// sendLabelled is send for answers shown after a label, such as the
// expression whose value they are.
func (c *Console) sendLabelled(ctx context.Context, ranks wire.RankSet, op string, body []byte, label string) ([]wire.Group, error) {
	groups, err := c.s.Command(ctx, ranks, op, body, c.opts.Timeout)
	if err != nil {
		return nil, err
	}
	groups, gones := c.goneOf(ctx, op, groups)
	for _, g := range groups {
		c.printReply(op, label, g)
	}
	c.printGone(op, gones)
	return groups, nil
}
