package report

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sdm-hpc/sdm/console"
	"github.com/sdm-hpc/sdm/wire"
)

// Options say what a watch looks for and what it does when it sees it.
type Options struct {
	Program []string
	// Attached is a job that ran before the watch: it is not run, a
	// snapshot is taken at once, and the job is left running (detached)
	// unless the watch ends it for a crash or a hang.
	Attached bool
	Traces   []Spec
	// Limits name, for a traced expression, the value over which the
	// ranks that pass with more are named in each pass.
	Limits map[string]float64
	// OnCrash is what follows a crash once its stacks are taken: stop
	// (halt the other ranks, take their stacks, end the job), kill (take
	// the others' stacks as they run, end the job) or continue (deliver
	// the signal, as gdb would, and watch on).
	OnCrash string
	// HangAfter is how long no rank's stack may stay unchanged before it
	// is a hang (0: never); OnHang is what follows: kill (end the job) or
	// watch (go on, and report the next hang after a change).
	HangAfter time.Duration
	OnHang    string
	// SnapshotEvery takes a snapshot of every rank's stacks and queues so
	// often (0: never); Requests ask for one now (SIGUSR1), or for one and
	// the job's end (SIGTERM: the allocation ends).
	SnapshotEvery time.Duration
	Requests      <-chan Request
	// EndAfter, when set, ends the job this long after its run, with a
	// last snapshot: an allocation's end that no signal announces.
	EndAfter   time.Duration
	HTML, JSON string    // the files written, "" for none
	Text       io.Writer // the program's output and the watch's news as they come, then the summary
}

// OnCrash and OnHang values.
const (
	Stop     = "stop"
	Kill     = "kill"
	Continue = "continue"
	Watch    = "watch"
)

// Request asks a watch for a snapshot, and with End, for the end of the
// job after it.
type Request struct {
	Why string
	End bool
}

// Watcher watches a job for one report. Its Writer is the console's
// output (JSON), and Drive the session's commands.
type Watcher struct {
	o   Options
	con *console.Console
	rec recorder
	rep Report

	mu      sync.Mutex // the news the console's printer hands over
	driven  bool       // Drive has begun
	start   time.Time
	tails   map[int][]string
	partial map[int]string
	text    sync.Mutex // one line of Text at a time

	all, running, ended wire.RankSet
	exits               map[string]wire.RankSet
	codes               map[string]int // the exit status of each end in exits
	traces              map[int]*Trace
	finish              bool // the watch ends now
	ending              bool // and ends the job, even one it attached to
	first               *Crash
	delivered           map[string]bool // crashes delivered: ranks, signal, frame
	still               string          // the stacks of the last sample, to see a hang
	stillSince          time.Time
	hangTold            bool
	lastShot            time.Time
}

// New returns a watcher for a job o describes.
func New(o Options) *Watcher {
	w := &Watcher{o: o, tails: map[int][]string{}, partial: map[int]string{}, exits: map[string]wire.RankSet{}, codes: map[string]int{},
		traces: map[int]*Trace{}, delivered: map[string]bool{}}
	w.rep = Report{Version: Version, Program: o.Program, Traces: []*Trace{}, Crashes: []*Crash{},
		Hangs: []*Shot{}, Shots: []*Shot{}, Exits: []Exit{}, Output: []Tail{}, Timeline: []Entry{}}
	w.rec.seen = w.seen
	w.start = time.Now()
	return w
}

// Writer is where the console prints, in JSON.
func (w *Watcher) Writer() io.Writer { return &w.rec }

// Drive runs the job to its end, a crash or a hang as the options say,
// then writes the report. Its error is the program's status
// (console.ProgramExit), or why the report could not be written.
func (w *Watcher) Drive(ctx context.Context, con *console.Console) error {
	w.con = con
	w.all, w.rep.Ranks = wire.All(con.Size()), con.Size()
	for i := range w.o.Traces {
		w.setTrace(ctx, &w.o.Traces[i])
	}
	w.mu.Lock()
	w.driven = true
	w.start = time.Now()
	w.rep.Started = w.start.UTC()
	w.mu.Unlock()
	w.lastShot, w.stillSince = w.start, w.start
	w.running = w.all
	if w.o.Attached {
		w.shot(ctx, "at attach")
	} else {
		w.exec(ctx, "run")
	}
	for ctx.Err() == nil {
		w.handle(ctx, w.rec.takeEvents())
		if w.finish || w.live().Empty() || w.running.Empty() {
			break
		}
		w.tick(ctx)
	}
	w.end(ctx)
	return w.write()
}

// live are the ranks whose programs have not ended.
func (w *Watcher) live() wire.RankSet { return w.all.Minus(w.ended) }

// since is the time since the run, in seconds.
func (w *Watcher) since() float64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return time.Since(w.start).Seconds()
}

// exec runs one console command and returns its reply.
func (w *Watcher) exec(ctx context.Context, format string, args ...any) *record {
	w.rec.takeReply()
	w.con.Exec(ctx, fmt.Sprintf(format, args...)) // what went wrong is in the reply
	if r := w.rec.takeReply(); r != nil {
		return r
	}
	return &record{Error: "no reply"}
}

// say prints a line of the watch's news, and puts it in the timeline.
func (w *Watcher) say(ranks wire.RankSet, format string, args ...any) {
	what := fmt.Sprintf(format, args...)
	w.entry(ranks.String(), what)
	w.print(fmt.Sprintf("sdm report: %s%s\n", prefix(ranks), what))
}

func (w *Watcher) print(text string) {
	if w.o.Text == nil {
		return
	}
	w.text.Lock()
	defer w.text.Unlock()
	io.WriteString(w.o.Text, text)
}

func prefix(ranks wire.RankSet) string {
	if ranks.Empty() {
		return ""
	}
	return "[" + ranks.String() + "] "
}

// tick waits for news for a while: a stop or an end of some rank, the
// period of a snapshot or of a look for a hang, or a request.
func (w *Watcher) tick(ctx context.Context) {
	period := 30 * time.Second
	if w.o.HangAfter > 0 {
		period = min(max(w.o.HangAfter/5, time.Second), period)
	}
	if w.o.SnapshotEvery > 0 {
		period = min(period, max(time.Until(w.lastShot.Add(w.o.SnapshotEvery)), 10*time.Millisecond))
	}
	if w.o.EndAfter > 0 {
		period = min(period, max(time.Until(w.start.Add(w.o.EndAfter)), 10*time.Millisecond))
	}
	wctx, cancel := context.WithCancel(ctx)
	asked := make(chan Request, 1)
	go func() {
		select {
		case req := <-w.o.Requests:
			asked <- req
			cancel()
		case <-wctx.Done():
		}
	}()
	before := w.running
	rep := w.exec(wctx, "[%v] wait any %g", w.running, period.Seconds())
	cancel()
	if ctx.Err() != nil {
		return
	}
	if w.o.EndAfter > 0 && time.Since(w.start) >= w.o.EndAfter {
		select {
		case asked <- Request{Why: "--end-after " + w.o.EndAfter.String(), End: true}:
		default:
		}
	}
	select {
	case req := <-asked:
		w.shot(ctx, req.Why)
		if req.End {
			w.outcome("ended by " + req.Why)
			w.finish = true
			if w.o.Attached {
				w.say(wire.RankSet{}, "%s: the job is left running as it was found", req.Why)
			} else {
				w.say(wire.RankSet{}, "%s: the job is ended", req.Why)
			}
			return
		}
	default:
	}
	if w.o.SnapshotEvery > 0 && time.Since(w.lastShot) >= w.o.SnapshotEvery {
		w.shot(ctx, "every "+w.o.SnapshotEvery.String())
	}
	if w.o.HangAfter > 0 && stillRunning(rep, before) {
		w.lookForHang(ctx)
	}
}

// stillRunning says whether a wait ended with every rank it waited for
// still running.
func stillRunning(rep *record, ranks wire.RankSet) bool {
	for _, g := range rep.Groups {
		if g.Note == "still-running" {
			r, err := wire.ParseRankSet(g.Ranks)
			return err == nil && r.Equal(ranks)
		}
	}
	return false
}

// lookForHang samples the running ranks' stacks: a job whose stacks have
// not changed for HangAfter hangs.
func (w *Watcher) lookForHang(ctx context.Context) {
	rep := w.exec(ctx, "[%v] stacks", w.running)
	roots := ""
	for _, g := range rep.Groups {
		if g.Op == "stacks" {
			roots += g.Ranks + ":" + stillKey(stacksOf(g.Value).Roots)
		}
	}
	if roots != w.still {
		w.still, w.stillSince, w.hangTold = roots, time.Now(), false
		return
	}
	if w.hangTold || time.Since(w.stillSince) < w.o.HangAfter {
		return
	}
	w.hangTold = true
	why := fmt.Sprintf("hang: no rank's stack changed for %v", time.Since(w.stillSince).Round(time.Second))
	s := w.snapshot(ctx, why, true)
	w.rep.Hangs = append(w.rep.Hangs, s)
	if w.o.OnHang == Kill {
		w.outcome("hung")
		w.finish, w.ending = true, true
		w.say(wire.RankSet{}, "%s: the job is ended (--on-hang kill)", why)
	} else {
		w.say(wire.RankSet{}, "%s: watching on (--on-hang watch)", why)
	}
}

// shot takes a snapshot for the reason given.
func (w *Watcher) shot(ctx context.Context, why string) {
	w.lastShot = time.Now()
	w.rep.Shots = append(w.rep.Shots, w.snapshot(ctx, "snapshot ("+why+")", false))
}

// snapshot takes the stacks and queues of the ranks that live, and with
// diagnose, deadlock's diagnosis.
func (w *Watcher) snapshot(ctx context.Context, why string, diagnose bool) *Shot {
	live := w.live()
	s := &Shot{At: w.since(), Why: why, Ranks: live.String()}
	if live.Empty() {
		s.Error = "no rank's program was left"
		return s
	}
	for _, g := range w.exec(ctx, "[%v] stacks", live).Groups {
		switch {
		case g.Op == "stacks":
			s.Stacks = g.Value
		case g.Error != "":
			s.Error += fmt.Sprintf("[%s] %s; ", g.Ranks, g.Error)
		}
	}
	for _, g := range w.exec(ctx, "[%v] queues", live).Groups {
		if string(g.Value) != "null" && g.Value != nil {
			s.Queues = append(s.Queues, g)
		}
	}
	if diagnose {
		for _, g := range w.exec(ctx, "[%v] deadlock", live).Groups {
			if g.Op == "deadlock" {
				s.Deadlock = g.Value
			}
		}
	}
	w.say(wire.RankSet{}, "%s: stacks of [%v] taken", why, live)
	return s
}

// state is what a stop or an exit event says.
type state struct {
	Reason     string     `json:"reason"`
	Signal     string     `json:"signal"`
	Breakpoint int        `json:"breakpoint"`
	Code       int        `json:"code"`
	Frame      wire.Frame `json:"frame"`
}

// fatal are the signals whose delivery is a crash.
var fatal = map[string]bool{"SIGSEGV": true, "SIGBUS": true, "SIGFPE": true, "SIGILL": true,
	"SIGABRT": true, "SIGSYS": true, "SIGTRAP": true}

// handle acts on the events that came: a crash, a pass through a
// tracepoint, another stop (let go on), an end.
func (w *Watcher) handle(ctx context.Context, events []record) {
	type crash struct {
		ranks wire.RankSet
		st    state
	}
	var crashes []crash
	var others wire.RankSet
	for _, ev := range events {
		ranks, err := wire.ParseRankSet(ev.Ranks)
		if err != nil {
			continue
		}
		var st state
		json.Unmarshal(ev.Value, &st)
		switch ev.Event {
		case "running":
			w.running = w.running.Union(ranks)
		case "stopped":
			w.running = w.running.Minus(ranks)
			switch {
			case st.Reason == "signal-received" && fatal[st.Signal]:
				crashes = append(crashes, crash{ranks, st})
			default:
				others = others.Union(ranks)
			}
		case "traced":
			var tr wire.Traced
			if json.Unmarshal(ev.Value, &tr) == nil {
				w.pass(ranks, tr)
			}
		case "exited":
			w.gone(ranks, exitText(st), console.ExitCode(wire.State{Signal: st.Signal, Reason: st.Reason, Code: st.Code}))
		case "lost":
			var why string
			json.Unmarshal(ev.Value, &why)
			w.gone(ranks, "lost: "+why, 1)
		}
	}
	if w.finish {
		return
	}
	for _, c := range crashes {
		if !w.finish {
			w.crash(ctx, c.ranks, c.st)
		}
	}
	if w.finish {
		return
	}
	if !others.Empty() {
		w.cont(ctx, others)
	}
}

// gone notes the end of ranks' programs, and its exit status.
func (w *Watcher) gone(ranks wire.RankSet, what string, code int) {
	ranks = ranks.Minus(w.ended)
	w.ended = w.ended.Union(ranks)
	w.running = w.running.Minus(ranks)
	if !ranks.Empty() {
		w.exits[what] = w.exits[what].Union(ranks)
		w.codes[what] = code
		w.print(fmt.Sprintf("sdm report: %s%s\n", prefix(ranks), what))
	}
}

func exitText(st state) string {
	switch {
	case st.Signal != "":
		return "killed by " + st.Signal
	case st.Reason == "killed":
		return "killed"
	}
	return "exited with code " + strconv.Itoa(st.Code)
}

// cont lets stopped ranks go on.
func (w *Watcher) cont(ctx context.Context, ranks wire.RankSet) {
	w.exec(ctx, "[%v] continue", ranks)
	w.running = w.running.Union(ranks.Minus(w.ended))
}

// crash takes the stacks of ranks that a fatal signal stopped, and of
// the others, then does what OnCrash says.
func (w *Watcher) crash(ctx context.Context, ranks wire.RankSet, st state) {
	again := ranks.String() + " " + st.Signal + " " + frameText(st.Frame)
	if w.delivered[again] {
		// The program's own handler (Open MPI's, say) raised it again.
		w.say(ranks, "%s again in %s, raised by the program's handler: delivered", st.Signal, frameText(st.Frame))
		w.cont(ctx, ranks)
		return
	}
	c := &Crash{At: w.since(), Ranks: ranks.String(), Signal: st.Signal, Frame: st.Frame}
	w.say(ranks, "%s in %s, caught at the fault", st.Signal, frameText(st.Frame))
	c.Stack = w.exec(ctx, "[%v] where full", ranks).Groups
	switch w.o.OnCrash {
	case Continue:
		c.Others = w.snapshot(ctx, "at the crash", false)
		c.Then = "the signal was delivered and the job went on (--on-crash continue)"
		w.delivered[again] = true
		w.cont(ctx, ranks)
	case Kill:
		c.Others = w.snapshot(ctx, "at the crash, the others running", false)
		c.Then = "the job was ended (--on-crash kill)"
		w.finish, w.ending = true, true
	default:
		if others := w.running; !others.Empty() {
			w.exec(ctx, "[%v] halt", others)
			w.exec(ctx, "[%v] wait 10", others)
		}
		c.Others = w.snapshot(ctx, "at the crash, every rank halted", false)
		c.Then = "every rank was halted, its stacks taken, and the job ended (--on-crash stop)"
		w.finish, w.ending = true, true
	}
	if w.first == nil {
		w.first = c
		w.outcome("crashed")
	}
	w.rep.Crashes = append(w.rep.Crashes, c)
}

// end ends what still runs when the job is to end, and gathers the ends.
func (w *Watcher) end(ctx context.Context) {
	if w.hangTold && w.first == nil {
		// Still hung when the job ended, whatever ended it.
		w.rep.Outcome = "hung"
	}
	if ctx.Err() != nil {
		w.outcome("interrupted")
	}
	if live := w.live(); w.finish && !live.Empty() && ctx.Err() == nil && (!w.o.Attached || w.ending) {
		w.exec(ctx, "[%v] kill", live)
		w.exec(ctx, "[%v] wait 10", live)
	}
	w.finish = true // no more actions: the events left are only recorded
	w.handle(ctx, w.rec.takeEvents())
	if left := w.live(); !left.Empty() && w.o.Attached {
		w.exits["left running as found (detached)"], w.codes["left running as found (detached)"] = left, 1
	} else if !left.Empty() {
		w.exits["still running when the report was written"], w.codes["still running when the report was written"] = left, 1
	}
	w.outcome("ended")
}

// frameText is a frame as the console says it.
func frameText(f wire.Frame) string {
	switch {
	case f.File != "":
		return fmt.Sprintf("%s at %s:%d", f.Func, f.File, f.Line)
	case f.From != "":
		return fmt.Sprintf("%s from %s", f.Func, f.From)
	}
	return f.Func
}

// status is the program's exit status: a crash's signal first, else the
// ranks' worst end.
func (w *Watcher) status() *console.ProgramExit {
	if c := w.first; c != nil {
		ranks, _ := wire.ParseRankSet(c.Ranks)
		return &console.ProgramExit{Code: 128 + int(unix.SignalNum(c.Signal)), Ranks: ranks, What: "crashed with " + c.Signal}
	}
	var worst *console.ProgramExit
	for what, ranks := range w.exits {
		code := w.codes[what]
		if worst == nil || code > worst.Code || code == worst.Code && ranks.Min() < worst.Ranks.Min() {
			worst = &console.ProgramExit{Code: code, Ranks: ranks, What: what}
		}
	}
	if worst == nil || worst.Code == 0 {
		return nil
	}
	return worst
}

// stillKey says where the ranks are as far as a hang is concerned: the
// call tree cut at each call out of the program's own code (an MPI
// routine, or any frame without a source file), since a library that
// polls (an MPI's progress engine) is somewhere else at each sample while
// its caller waits on.
func stillKey(nodes []console.TreeNode) string {
	var b strings.Builder
	var walk func(n console.TreeNode)
	walk = func(n console.TreeNode) {
		fmt.Fprintf(&b, "%s:%s:%d[%s](", n.Func, n.File, n.Line, n.Ranks)
		if n.File != "" && !isMPI(n.Func) {
			for _, c := range n.Children {
				walk(c)
			}
		}
		b.WriteString(")")
	}
	for _, n := range nodes {
		walk(n)
	}
	return b.String()
}

// isMPI says whether a function is an MPI routine, by its C or Fortran
// name.
func isMPI(fn string) bool {
	for _, p := range []string{"MPI_", "PMPI_", "mpi_", "pmpi_", "MPIX_"} {
		if strings.HasPrefix(fn, p) {
			return true
		}
	}
	return false
}

// outcome sets the report's outcome, unless it has one: the first of a
// crash, a hang, an end asked for, and the job's own end.
func (w *Watcher) outcome(what string) {
	if w.rep.Outcome == "" {
		w.rep.Outcome = what
	}
}
