package gdbmi

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sdm-hpc/sdm/internal/fifo"
	"github.com/sdm-hpc/sdm/internal/inherit"
	"github.com/sdm-hpc/sdm/member"
)

// view is a rank's share of a Host's gdb: its inferior, as a conn. mu
// guards the fields below it.
type view struct {
	h     *Host
	inf   int
	group string // "i3"
	queue *fifo.Queue[Record]
	async chan Record
	done  chan struct{} // closed by end
	ended sync.Once

	mu       sync.Mutex
	handled  uint64
	progress chan struct{}
	// Threads of the process: the rank's number for each of gdb's
	// (local), gdb's for each of the rank's (global), the next number, and
	// whether each of gdb's runs.
	local, global map[int]int
	nextThread    int
	running       map[int]bool
	thread, frame int // the selected thread (gdb's number) and frame
	// listNext is the line a bare list goes on from, after the rank's
	// last list; 0 once a frame was selected or shown since (list.go).
	listNext int
	// told says whether the Backend was last told that the process runs.
	told bool
	// cause is the stop being told once the process's other threads have
	// stopped (stop.go).
	cause *Record
	// resuming is held while a step sets the other threads going.
	resuming sync.Mutex
	// resumes is held for reading by each command that sets the process
	// going, while gdb runs it, and for writing by kill as it starts, so
	// that no resume is under way once the process is being killed.
	resumes  sync.RWMutex
	locked   bool // scheduler-locking on: only the selected thread runs
	solib    solibVars
	attached bool
	program  bool         // the inferior has the rank's program loaded
	pid      int          // the process's, once gdb said it started
	killing  bool         // while kill ends the process: its end is kill's news
	cpus     *unix.CPUSet // the processors of the rank's program (Share)

	// plainArgs: the program's arguments need no shell; fds: its rank's
	// server hands it descriptors (hoststart.go).
	plainArgs, fds bool
	// killedStopped is set once a thread ended while the process was
	// stopped; ending counts the rank's commands running that end its
	// process (endsProcess).
	killedStopped bool
	ending        int
	untold        *untoldEnd // an end to tell (exited)
	// gone is closed once gdb has told the end of the process.
	gone chan struct{}
	// Breakpoints: the rank's number for each of gdb's and gdb's for
	// each of the rank's, and the last number given.
	points, numbers map[int]int
	lastPoint       int
	closed          bool
}

func newView(h *Host, inf int) *view {
	v := &view{
		h: h, inf: inf, group: "i" + strconv.Itoa(inf),
		queue: fifo.New[Record](), async: make(chan Record), done: make(chan struct{}), progress: make(chan struct{}),
		local: map[int]int{}, global: map[int]int{}, running: map[int]bool{},
		points: map[int]int{}, numbers: map[int]int{}, solib: solibVars{stop: true}, gone: make(chan struct{}), plainArgs: true,
	}
	go v.forward()
	return v
}

// forward hands the view's records to Async's reader, as GDB.forward.
func (v *view) forward() {
	defer close(v.async)
	for {
		r, err := v.queue.Pop(context.Background())
		if err != nil {
			return
		}
		v.async <- r
	}
}

// environ makes env the environment the rank's program starts with: what
// differs from gdb's own is set, and what gdb has and env has not is
// unset, as are, in gdb's first inferior, those gdb was started without
// and gave back to it (member.GDBWithout).
func (v *view) environ(ctx context.Context, env []string) error {
	mine := v.h.gdbEnv
	want := map[string]bool{}
	for _, kv := range env {
		k, val, ok := strings.Cut(kv, "=")
		if !ok {
			continue
		}
		if k == inherit.Env && !v.noteInherit(val) {
			continue // read by the wrapper alone
		}
		want[k] = true
		if old, ok := mine[k]; ok && old == val {
			continue
		}
		if err := v.cli(ctx, "set environment "+kv); err != nil {
			return err
		}
	}
	gone := slices.Collect(maps.Keys(mine))
	if v.inf == 1 {
		gone = append(gone, member.GDBWithout()...)
	}
	for _, k := range gone {
		if !want[k] {
			if err := v.cli(ctx, "unset environment "+k); err != nil {
				return err
			}
		}
	}
	return nil
}

// cli runs a CLI command on the view's inferior.
func (v *view) cli(ctx context.Context, command string) error {
	_, _, err := v.h.g.Run(ctx, "-interpreter-exec --thread-group "+v.group+" console "+Quote(command))
	return err
}

// Async implements conn.
func (v *view) Async() <-chan Record { return v.async }

// Handled implements conn.
func (v *view) Handled() {
	v.mu.Lock()
	v.handled++
	close(v.progress)
	v.progress = make(chan struct{})
	v.mu.Unlock()
}

// Mark implements conn: once the host has routed every record gdb
// printed so far, the number routed to this view.
func (v *view) Mark() uint64 {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	v.h.g.WaitHandled(ctx, v.h.g.Mark())
	return uint64(v.queue.Pushed())
}

// WaitHandled implements conn.
func (v *view) WaitHandled(ctx context.Context, n uint64) bool {
	for {
		v.mu.Lock()
		handled, progress := v.handled, v.progress
		v.mu.Unlock()
		if handled >= n {
			return true
		}
		select {
		case <-progress:
		case <-v.done:
			return false
		case <-ctx.Done():
			return false
		}
	}
}

// Done implements conn.
func (v *view) Done() <-chan struct{} { return v.done }

// Err implements conn.
func (v *view) Err() error {
	if err := v.h.g.Err(); err != nil {
		return err
	}
	select {
	case <-v.done:
		return ErrClosed
	default:
		return nil
	}
}

// Ended implements conn.
func (v *view) Ended() bool {
	select {
	case <-v.done:
		return true
	default:
		return v.h.g.Ended()
	}
}

// end closes the view's records: its gdb has ended, or it is closed.
func (v *view) end() {
	v.ended.Do(func() {
		close(v.done)
		v.queue.Close()
	})
}

// Close implements conn: the rank's process is killed, or let go of if
// gdb attached to it, its inferior removed, and the gdb ended after its
// last view.
func (v *view) Close() error {
	v.mu.Lock()
	if v.closed {
		v.mu.Unlock()
		return nil
	}
	v.closed = true
	live, attached := len(v.global) > 0, v.attached
	v.mu.Unlock()
	if !v.h.g.Ended() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		v.h.breaks.Lock()
		v.mu.Lock()
		var mine []int
		for n := range v.numbers {
			mine = append(mine, n)
		}
		v.mu.Unlock()
		for _, n := range mine {
			v.leave(ctx, n)
		}
		v.h.breaks.Unlock()
		if live && attached {
			v.h.g.Run(ctx, "-target-detach "+v.group)
		} else if live {
			v.kill(ctx)
		}
		if v.inf != 1 {
			v.h.g.Run(ctx, "-remove-inferior "+v.group)
		}
		cancel()
	}
	v.h.mu.Lock()
	delete(v.h.views, v.inf)
	v.h.mu.Unlock()
	v.end()
	v.h.release()
	return nil
}

// Kill implements conn: the view is closed at once.
func (v *view) Kill() { v.Close() }

// Run implements conn: the command goes to the rank's inferior, with the
// rank's numbers for threads and breakpoints (hostview.go's command
// table, hostbreak.go).
func (v *view) Run(ctx context.Context, command string) (Record, string, error) {
	select {
	case <-v.done:
		return Record{}, "", v.Err()
	default:
	}
	words := miWords(command)
	if len(words) == 0 {
		return v.h.g.Run(ctx, command)
	}
	name, args := words[0], words[1:]
	if softWatch(name, args) {
		return Record{}, "", errSharedSoftWatch
	}
	if endsProcess(name, args) {
		v.mu.Lock()
		v.ending++
		v.mu.Unlock()
		defer func() {
			// The records gdb printed before the answer are the
			// command's: they are routed before the mark ends.
			wait, cancel := context.WithTimeout(context.Background(), viewTimeout)
			v.h.g.WaitHandled(wait, v.h.g.Mark())
			cancel()
			v.mu.Lock()
			v.ending--
			v.mu.Unlock()
		}()
	}
	switch name {
	case "-gdb-set":
		return v.set(ctx, command, args)
	case "-enable-pretty-printing":
		return done(), "", nil
	case "-environment-cd":
		if len(args) != 1 {
			return Record{}, "", errors.New("-environment-cd: one directory")
		}
		return v.h.g.Run(ctx, "-interpreter-exec --thread-group "+v.group+" console "+Quote("set cwd "+unquote(args[0])))
	case "-exec-interrupt":
		return v.resume(ctx, command)
	case "-file-exec-and-symbols":
		r, out, err := v.h.g.Run(ctx, inject(command, "--thread-group "+v.group))
		v.mu.Lock()
		v.program = err == nil
		v.mu.Unlock()
		return r, out, err
	case "-inferior-tty-set":
		return v.h.g.Run(ctx, inject(command, "--thread-group "+v.group))
	case "-exec-run":
		return v.start(ctx, func() (Record, string, error) { return v.h.g.Run(ctx, inject(command, "--thread-group "+v.group)) })
	case "-target-attach":
		// Marked before: the process it finds is left as it was.
		v.mu.Lock()
		v.attached = true
		v.mu.Unlock()
		r, out, err := v.h.g.Run(ctx, inject(command, "--thread-group "+v.group))
		if err != nil {
			v.mu.Lock()
			v.attached = false
			v.mu.Unlock()
		}
		return r, out, err
	case "-target-detach":
		r, out, err := v.h.g.Run(ctx, "-target-detach "+v.group)
		if err == nil {
			v.mu.Lock()
			v.attached = false
			v.mu.Unlock()
		}
		return r, out, err
	case "-exec-continue":
		return v.resume(ctx, command)
	case "-exec-step", "-exec-next", "-exec-finish", "-exec-until", "-exec-step-instruction", "-exec-next-instruction":
		return v.step(ctx, command)
	case "-thread-select":
		return v.selectThread(ctx, args)
	case "-thread-info":
		return v.threadInfo(ctx, command)
	case "-stack-select-frame":
		r, out, err := v.h.g.Run(ctx, inject(command, v.context()))
		if n, aerr := strconv.Atoi(lastWord(args)); err == nil && aerr == nil {
			v.mu.Lock()
			v.frame, v.listNext = n, 0
			v.mu.Unlock()
		}
		return r, out, err
	case "-break-insert", "-break-watch":
		return v.breakInsert(ctx, name, args)
	case "-break-delete", "-break-enable", "-break-disable", "-break-after", "-break-condition":
		return v.breakNumbers(ctx, name, args)
	case "-break-list":
		return v.breakList(ctx)
	case "-data-evaluate-expression":
		if len(args) == 1 && unquote(args[0]) == "$bpnum" {
			v.mu.Lock()
			defer v.mu.Unlock()
			return done(Field{Name: "value", Value: Value{Str: strconv.Itoa(v.lastPoint)}}), "", nil
		}
	case "-interpreter-exec":
		if len(args) == 2 && args[0] == "console" && isQuit(unquote(args[1])) {
			return Record{}, "", errShared
		}
		if len(args) == 2 && args[0] == "console" && isKill(unquote(args[1])) {
			if out, ok, err := v.kill(ctx); ok {
				return done(), out, err
			}
		}
		if text, ok := v.setting(ctx, args); ok {
			return done(), text, nil
		}
		if len(args) == 2 && args[0] == "console" && lists(unquote(args[1])) {
			return v.list(ctx, unquote(args[1]))
		}
		if len(args) == 2 && args[0] == "console" {
			cli := unquote(args[1])
			if v.startsProgram(cli) {
				return v.start(ctx, func() (Record, string, error) { return v.rankCLI(ctx, command, cli) })
			}
			return v.rankCLI(ctx, command, cli)
		}
	case "-gdb-exit":
		return Record{}, "", errShared
	}
	return v.aimed(ctx, command)
}

// endsProcess says whether a command ends the rank's process as a
// matter of course: kill, detach, and a run that replaces it. The
// Backend tells such an end its own way.
func endsProcess(name string, args []string) bool {
	switch name {
	case "-exec-run", "-target-detach":
		return true
	case "-interpreter-exec":
		if len(args) != 2 {
			return false
		}
		w := strings.Fields(unquote(args[1]))
		return len(w) > 0 && slices.Contains([]string{"kill", "k", "run", "r", "start", "starti", "detach"}, w[0])
	}
	return false
}

// errShared refuses to end a gdb that other ranks share.
var errShared = errors.New("the rank shares its host's gdb, which ends with the session (kill ends the rank's process)")

// isQuit says whether a CLI command is gdb's quit.
func isQuit(command string) bool {
	w := strings.Fields(command)
	return len(w) > 0 && (w[0] == "quit" || w[0] == "q" || w[0] == "qui")
}

// set takes the settings a view keeps or the host made, and passes the
// others on.
func (v *view) set(ctx context.Context, command string, args []string) (Record, string, error) {
	if len(args) == 0 {
		return v.h.g.Run(ctx, command)
	}
	value := lastWord(args)
	switch args[0] {
	case "scheduler-locking":
		v.mu.Lock()
		v.locked = value == "on"
		v.mu.Unlock()
		return done(), "", nil
	case "stop-on-solib-events":
		v.mu.Lock()
		v.solib.stop = value != "0"
		v.mu.Unlock()
		return done(), "", v.h.settleLoads(ctx)
	case "auto-solib-add":
		v.mu.Lock()
		v.solib.auto = value == "on"
		v.mu.Unlock()
		return done(), "", v.h.settleLoads(ctx)
	}
	if hostOwned[args[0]] {
		return done(), "", nil
	}
	return v.aimed(ctx, command)
}

// setting answers the CLI's show of a setting the view keeps, and takes
// its set: the rank's, not the host's.
func (v *view) setting(ctx context.Context, args []string) (string, bool) {
	if len(args) != 2 || args[0] != "console" {
		return "", false
	}
	words := strings.Fields(unquote(args[1]))
	if len(words) < 2 || (words[0] != "show" && words[0] != "set") {
		return "", false
	}
	v.mu.Lock()
	s := v.solib
	v.mu.Unlock()
	switch {
	case words[0] == "show" && words[1] == "stop-on-solib-events":
		stop := 0
		if s.stop {
			stop = 1
		}
		return fmt.Sprintf("Stopping for shared library events is %d.\n", stop), true
	case words[0] == "show" && words[1] == "auto-solib-add":
		return fmt.Sprintf("Autoloading of shared library symbols is %s.\n", onOff(s.auto)), true
	case words[0] == "set" && len(words) == 3 && (words[1] == "stop-on-solib-events" || words[1] == "auto-solib-add"):
		_, text, err := v.set(ctx, "", words[1:])
		if err != nil {
			return err.Error(), true
		}
		return text, true
	}
	return "", false
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}

// context is the options that aim a command at the rank: its selected
// thread and frame (no frame while the thread runs), or its inferior.
func (v *view) context() string {
	v.mu.Lock()
	defer v.mu.Unlock()
	if _, ok := v.local[v.thread]; !ok || v.thread == 0 || v.running[v.thread] {
		return v.aimThreadLocked()
	}
	return fmt.Sprintf("--thread %d --frame %d", v.thread, v.frame)
}

// aimThread aims a command at the rank's selected thread, running or not,
// or at its inferior while it has none. A command that reads an
// expression (-break-condition, -data-evaluate-expression) aimed at an
// inferior with --thread-group leaves gdb 13 half in that inferior: the
// next command aimed at another's thread (a finish) plants its breakpoint
// in the wrong program.
func (v *view) aimThread() string {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.aimThreadLocked()
}

func (v *view) aimThreadLocked() string {
	if _, ok := v.local[v.thread]; !ok || v.thread == 0 {
		return "--thread-group " + v.group
	}
	return "--thread " + strconv.Itoa(v.thread)
}

// aimed runs a command aimed at the rank (context). Should the selected
// thread have died meanwhile, gdb refuses it before it runs the command
// ("Invalid thread id", or "No such process" as it reads its frame): the
// command then goes to the rank's inferior, as it would on a gdb of the
// rank's own, which has no thread selected once its process is gone.
func (v *view) aimed(ctx context.Context, command string) (Record, string, error) {
	aim := v.context()
	r, out, err := v.h.g.Run(ctx, inject(command, aim))
	if err != nil && strings.HasPrefix(aim, "--thread ") && threadGone(err) {
		return v.h.g.Run(ctx, inject(command, "--thread-group "+v.group))
	}
	return r, out, err
}

// threadGone says whether gdb refused a command for its thread's end.
func threadGone(err error) bool {
	return strings.Contains(err.Error(), "Invalid thread id") || strings.Contains(err.Error(), "No such process")
}

// selectThread selects a thread by the rank's number for it.
func (v *view) selectThread(ctx context.Context, args []string) (Record, string, error) {
	n, err := strconv.Atoi(lastWord(args))
	v.mu.Lock()
	id, ok := v.global[n]
	v.mu.Unlock()
	if err != nil || !ok {
		return Record{}, "", newRefusal(fmt.Sprintf("Invalid thread id: %s", lastWord(args)))
	}
	r, out, err := v.h.g.Run(ctx, "-thread-select "+strconv.Itoa(id))
	if err != nil {
		return r, out, err
	}
	v.mu.Lock()
	v.thread, v.frame, v.listNext = id, 0, 0
	r.Results = with(r.Results, "new-thread-id", strconv.Itoa(n))
	v.mu.Unlock()
	return r, out, nil
}

// threadInfo lists the rank's threads, by its numbers.
func (v *view) threadInfo(ctx context.Context, command string) (Record, string, error) {
	r, out, err := v.aimed(ctx, command)
	if err != nil {
		return r, out, err
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	var mine []Field
	for _, f := range r.Results.Get("threads").Fields {
		if n, ok := v.local[f.Value.Int("id")]; ok {
			f.Value = with(f.Value, "id", strconv.Itoa(n))
			mine = append(mine, f)
		}
	}
	slices.SortFunc(mine, func(a, b Field) int { return a.Value.Int("id") - b.Value.Int("id") })
	res := Value{Kind: Tuple, Fields: []Field{{Name: "threads", Value: Value{Kind: List, Fields: mine}}}}
	if n, ok := v.local[v.thread]; ok {
		res.Fields = append(res.Fields, Field{Name: "current-thread-id", Value: Value{Str: strconv.Itoa(n)}})
	}
	r.Results = res
	return r, out, nil
}

// done is a ^done result with results.
func done(results ...Field) Record {
	return Record{Type: Result, Class: "done", Results: Value{Kind: Tuple, Fields: results}}
}

// with returns v with its field name set to s.
func with(v Value, name, s string) Value { return withValue(v, name, Value{Str: s}) }

// withValue returns v with its field name set to value.
func withValue(v Value, name string, value Value) Value {
	fields := slices.Clone(v.Fields)
	for i := range fields {
		if fields[i].Name == name {
			fields[i].Value = value
			v.Fields = fields
			return v
		}
	}
	v.Fields = append(fields, Field{Name: name, Value: value})
	if v.Kind == String {
		v.Kind = Tuple
	}
	return v
}

// without returns v without its field name.
func without(v Value, name string) Value {
	v.Fields = slices.DeleteFunc(slices.Clone(v.Fields), func(f Field) bool { return f.Name == name })
	return v
}

// inject puts options right after an MI command's name, where gdb reads
// the options every command takes.
func inject(command, options string) string {
	name, rest, _ := strings.Cut(command, " ")
	if rest == "" {
		return name + " " + options
	}
	return name + " " + options + " " + rest
}

// miWords splits an MI command at spaces, a C string being one word with
// its quotes.
func miWords(command string) []string {
	var words []string
	var b strings.Builder
	quoted, escaped := false, false
	for i := 0; i < len(command); i++ {
		c := command[i]
		switch {
		case escaped:
			escaped = false
		case quoted && c == '\\':
			escaped = true
		case c == '"':
			quoted = !quoted
		case c == ' ' && !quoted:
			if b.Len() > 0 {
				words = append(words, b.String())
				b.Reset()
			}
			continue
		}
		b.WriteByte(c)
	}
	if b.Len() > 0 {
		words = append(words, b.String())
	}
	return words
}

// unquote reads a word of miWords: a C string's text, or the word.
func unquote(word string) string {
	if !strings.HasPrefix(word, `"`) {
		return word
	}
	p := &parser{s: word}
	s, err := p.cstring()
	if err != nil {
		return word
	}
	return s
}

func lastWord(words []string) string {
	if len(words) == 0 {
		return ""
	}
	return words[len(words)-1]
}
