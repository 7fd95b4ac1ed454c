// Package console is the command line of the front end: it reads commands
// such as "[0-3] where", sends them through a client.Session to the rank
// set given (or the focus set), and prints the merged answers and the
// events of the tree, as text (one line per distinct answer, rank set
// first) or as JSON (one object per line). Session.Run drives a whole
// session: its commands from -e, a batch file or the terminal, then its end.
//
// What enters: command lines (from -e, a batch file or the terminal) and
// the tree's news (client.Event). What leaves: commands to the tree through
// the Tree interface (a client.Session, or a fake in tests), each body
// encoded by its op's entry, and text or JSON on the console's writer,
// each answer and event printed by the printer of its entry
// (printers.go, which decodes the answer with the entry's type).
//
// # Commands
//
// The console parses "[SET] command args" (parse, which is fuzzed; the set
// defaults to the focus), sends through client, and prints one line per
// distinct answer with its ranks first. Command names resolve as gdb's do
// (names.go): a name or alias, else a prefix only one command starts with,
// or one whose name is a prefix of every other match (th is thread); an
// ambiguous prefix lists its commands, and an unknown word gets the
// nearest name by edit distance. info SUB resolves its subcommand the same
// way and runs the op of sdm's own command (info locals is locals), or one
// of its own (info-frame, registers, sharedlibrary: gdb's CLI text).
//
// A command typed wrong is reported on one line and the session (or the
// script) goes on; so is a line longer than 64 KiB (MaxLine): scripts are
// read a line at a time whatever its length, keeping the start of a longer
// line only, and the error names the script and the line ("-e:3: a line of
// 70000 bytes is longer than the 64 KiB a command may be"). The terminal
// keeps lines of 4 KiB and more out of its history, which liner could not
// read back.
//
// What the console keeps or merges itself:
//
//   - where and bt send backtrace (numbered frames with their arguments,
//     locals with full, a limit as gdb's bt N), whose answers differ by
//     value and so merge in the tree only where values agree; the console
//     merges again the groups whose frames and variables are the same and
//     shows a value they do not share as <N values>. stacks uses sample,
//     whose answers hold no values and merge into one tree on the way up.
//   - up, down and frame go through gdb's CLI (up op), which keeps gdb's
//     limits and words and sets the place list lists next; list is the
//     CLI's, whose place each rank's gdb keeps.
//   - Displays live in the console, each with its rank set: a restart,
//     which starts new gdbs, keeps them, and at a stop the console sends
//     one evaluate (all the displays' expressions) to the ranks that
//     stopped, one round trip however many displays there are, and merges
//     each display's values across the answers. A value whose symbol the
//     frame lacks (gdb's No symbol, Value.Absent) is not shown at a stop,
//     as gdb shows a display only in the block it was made in.
//   - Completion asks one rank (the focus set's first) for the program's
//     functions and source files (symbols) at the first Tab after break,
//     tbreak or list, and keeps the answer: every rank runs the same
//     program.
//   - delete alone asks at the terminal (Console.ask, set by the
//     interactive loop); a script's commands do not ask. News printed while
//     the terminal shows the prompt erases the line first and shows the
//     prompt again after it.
//   - A reported library load prints as "[0-7] loaded /path/libx.so" only
//     after set verbose loads on (the console's own setting; --json prints
//     every one, as a library-loaded event) and does not end a wait; set
//     dlopen and show dlopen check the list before any rank sees it.
//
// # JSON
//
// Under --json (docs/JSON.md) each command line gets one reply object,
// gathered in reply.go without any code of the command's own: Exec opens
// the reply from the command table's entry; the console's tree is wrapped
// (recording) so that the first op the command sends, and its body decoded
// by the op table, become the reply's command; what the command prints
// (printReply, report, notes, println) lands in the reply instead of on a
// line; Exec prints it when the command ends. Ops that set ranks going
// (run, continue, step, halt…) mark those ranks with the command's number,
// which their later events carry. The exited events also give
// --exit-status program the ranks' worst exit status (ProgramExit, which
// cmd/sdm turns into sdm's own).
//
// # Events and the display window
//
// Events are gathered for a 100 ms display window (PTP's aggregation
// window) and merged once more, in order per rank; while a wait (or a
// step, next or finish, which wait like gdb's) is in progress they are
// held, so each distinct stop of the wait prints once however far apart in
// time the ranks got there. A script holds them from a run, continue, halt
// or kill on, through the wait that follows, so stops that came before the
// wait began merge too; at the terminal they print as they come until a
// wait begins. In text, running news is never printed and never enters a
// batch: output travels on its own stream and may overtake it, and a
// running between two ranks' stops would keep them apart. A rank's output
// comes before that rank's stop or exit (package client); a batch that
// holds 1 MiB of output prints at once (PrintEvents), in one write, and
// while a wait holds the news, its output does.
//
// # Ranks that are gone
//
// A command that needs a process (continue, step, where, locals, print, …)
// whose answers fail on some ranks asks those ranks' status once; the
// ranks whose process exited, was killed, detached or never started are
// printed as what became of it, one line per outcome ("[7] exited with
// code 0"), in place of gdb's words ("No registers.", "The program is not
// being run."), which name nothing the user can act on.
//
// # Waits
//
// A wait asks for status and asks again at each stop, exit, loss or error
// event, until no rank of its set runs (wait) or one does not (wait any),
// or its deadline. Ranks blocked in MPI never stop by themselves, so the
// end of a wait is not an error: the console prints which ranks still run,
// merged by what they do (a step from one frame, or just running), and a
// script goes on; a deadline that passed counts in the exit status. These
// notes are the console's own lines (JSON objects with a note field),
// printed after the events the wait held. A ^C cancels the command's
// context: a wait asks once more, briefly, which ranks still run and says
// so ("interrupted: [2-3] still running"), other commands say they were
// abandoned; the ranks are left as they are. ^C at the prompt (liner reads
// it as a key) halts the running ranks of the focus set and waits for
// their stops, as gdb's ^C does.
//
// # stacks and their classes
//
// stacks sends sample (--samples K --interval D, one sample by default: a
// session's ranks are mostly stopped under gdb, where more cannot differ),
// whose answer is already STAT's call-prefix tree merged in the tree, and
// --dot/--svg draw it with Graphviz. From the tree alone the console
// (triage.go) derives STAT's equivalence classes: a rank's paths end at
// the nodes that hold it and none of whose children do, and ranks with the
// same ends are one class, found by splitting rank sets node by node, so
// the cost follows the paths and classes, not the ranks (a thread that
// ends where another thread of its rank passes on is not seen apart: the
// tree holds ranks, not threads). Ends are compared by place
// (wire.Frame.Place, wire.SamePlace): the callers by their lines, which
// are call sites, the innermost frame by its function only, since its line
// is wherever the pc was (a rank polling in MPI_Recv shows __sched_yield
// at two lines of its stub from one sample to the next). Classes print
// biggest first, those smaller than the mean marked as outliers; the
// tree's Moved splits the ranks into those whose threads left their places
// between samples and those that did not; and the last line names one rank
// per class, as a rank set, or as "sdm attach --pid STARTER --ranks ..."
// when the session attached to a running job through its starter
// (Options.Attach, Suggestion). sdm stacks --pid (cmd/sdm/attach.go, beside attach)
// is that command alone on an acquired job, three samples 100 ms apart by
// default, with launcher.Options.GDB asking for servers that start gdb
// lazily.
//
// # compare
//
// compare EXPR sends wire.OpCompare; every rank's value comes back as one
// summary merged in the tree (op.Summaries), which SummaryText prints, as
// --json and DAP's sdm/compare read it.
//
// # Queues and deadlock
//
// queues prints each rank's MPI operations in flight (package mpiq). The
// console groups operations that read alike, a peer at one offset from
// every rank as rank+1, so a ring of 512 reads as one line.
//
// deadlock samples the stacks (as stacks) and asks for the queues. From
// the stacks alone (Diagnose): each main thread's outermost MPI call, by
// its C name whatever binding it came through, the ranks outside MPI,
// collectives that do not match. With queues (waitFor): a blocking
// receive, probe or send has an AND arc to its peer, MPI_ANY_SOURCE OR
// arcs to its communicator's other members, a wait the arcs of the posted
// operations it waits on (AND for MPI_Waitall, OR for MPI_Waitany; a
// nonblocking collective's are the members that have not posted it, and a
// wait whose collectives every member posted is under way), a collective
// AND arcs to the members of its communicator that are not in it
// (communicators compared by their members). A send and a receive that
// match each other are under way. Ranks not blocked release those that
// wait for them; the blocked ranks that nothing releases are stuck, the
// strongly connected parts among them the cycles (said by their pattern
// when every rank's call reads alike relative to the rank), the others
// behind them; the ranks outside MPI that blocked ranks wait for are named
// with where they are. A blocked receive whose peer sends to it, blocked
// or posted, only with other tags is a receive no send matches.
//
// # restart
//
// restart ends the whole job and starts it again through its launcher
// (Restarter), since a rank run again alone by its gdb would start outside
// its MPI job and die in MPI_Init. The pieces, each in its own package:
//
//  1. The console keeps what the user set up: each rank's breakpoint list
//     (breakpoints, which carries each breakpoint's location as it was
//     asked for, gdb's original-location), gdb's last breakpoint number
//     (print $bpnum, deleted ones included) and dlopen setting, grouped by
//     rank as the answers merge. Named sets and the focus live in the
//     console and stay.
//  2. launcher.Relaunchable relaunches as the Restarter: it ends the old
//     job (launcher.Session.End: every server quits, the launcher exits or
//     is cancelled at the deadline, so nothing is left behind), then
//     Session.Relaunch starts it as it was started, from the options kept
//     at the launch (the adapter chosen, launcher options, size, target;
//     or the same MPIR launch and acquisition), with a session directory,
//     key and port of its own, and every rank must join within the connect
//     timeout (the error names the missing ones). The program is loaded as
//     at the first start.
//  3. The relay switches: the console drives a client.Relay, which sends
//     each command to the current session and keeps one queue of events
//     across the switch; the console's event printer and its waits never
//     notice it.
//  4. The console replays the dlopen settings and the breakpoints, then
//     sends run to every rank, and prints "restarted: 4 ranks under
//     mpirun; 2 breakpoints planted", each breakpoint that could not be
//     planted naming its ranks.
//
// Breakpoint numbers: a new gdb numbers from 1; the user knows the old
// numbers. The console makes the breakpoints again in number order, and
// before each one whose number gdb would not give next it sends break-next
// N, which uses up the numbers below N in gdb itself; at the end, numbers
// up to the old $bpnum are used up too, so new breakpoints go on from
// where the old gdb was. Keeping the numbers in gdb, rather than a map
// from the user's numbers to gdb's in the front end, keeps one number for
// a breakpoint everywhere: in answers, in stop events (merged at every
// node of the tree, which knows nothing of a map), in breakpoints and in
// raw gdb commands; and it costs the restart a few gdb commands per rank,
// not every command a translation. Ranks whose lists differ (breakpoints
// set on some ranks only) are replayed group by group, each under its own
// numbers. Temporary breakpoints that were hit are gone from the list, as
// in gdb.
//
// run is refused under a launcher that starts the ranks as one job
// (launcher.Session.Launcher: mpirun, mpiexec, srun, poe, or an MPIR
// starter) on ranks that were run since the job started or whose process
// has ended, and names restart in its place. Under the local launcher
// each rank's program stands alone, and run runs it again as gdb does.
//
// A job taken with sdm attach is not restartable: it was started by the
// user, and the refusal gives the command that starts it under sdm (its
// starter's own command line after sdm debug --mpir --starter --). A job
// of sdm listen runs where its batch system placed it. Jobs on a --target
// start again there, over ssh, like any launch.
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
