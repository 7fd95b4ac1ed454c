package dap

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	godap "github.com/google/go-dap"

	"github.com/sdm-hpc/sdm/client"
	"github.com/sdm-hpc/sdm/op"
	"github.com/sdm-hpc/sdm/wire"
)

// stop is a group of ranks that stopped at one place.
type stop struct {
	ranks wire.RankSet
	state wire.State
	body  []byte // the state as the event encoded it: equal bodies, one stop
}

// pump turns the job's events into the client's until the session ends:
// output with its ranks in front of each line, and stops, each gathered
// for a window (Options.Window) so that the ranks that print the same
// line or stop together a few milliseconds apart show as one (a stop
// goes at once when no rank runs any more); continued, exited and
// terminated. The repl's console sees every event but output, which the
// client has already.
func (a *adapter) pump(j *job) {
	defer close(j.pumped)
	defer j.repl.close()
	var h held
	for {
		ctx, cancel := a.ctx, context.CancelFunc(func() {})
		if !h.empty() {
			ctx, cancel = context.WithDeadline(a.ctx, h.flushAt)
		}
		ev, err := j.s.NextEvent(ctx)
		cancel()
		if err != nil {
			a.flush(j, &h)
			if a.ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded) {
				continue
			}
			if j.state.terminate() {
				a.send(&godap.TerminatedEvent{Event: godap.Event{Event: "terminated"}})
			}
			return
		}
		a.event(j, &h, ev)
	}
}

// held is what the pump holds for a window before it tells the client.
type held struct {
	stops            []stop
	outs             []wire.Group
	going            wire.RankSet // ranks told running, not told to the client yet
	firstAt, flushAt time.Time
}

func (h *held) empty() bool { return len(h.stops) == 0 && len(h.outs) == 0 && h.going.Empty() }

// hold has what is held go a window after the last event that added to
// it, but no later than ten windows after the first: ranks that stop one
// after another show as one stop, however many.
func (h *held) hold(window time.Duration) {
	now := time.Now()
	if h.empty() {
		h.firstAt = now
	}
	h.flushAt = now.Add(window)
	if last := h.firstAt.Add(10 * window); last.Before(h.flushAt) {
		h.flushAt = last
	}
}

// flush tells the client what is held: the ranks that went on, the
// output, then the stops.
func (a *adapter) flush(j *job, h *held) {
	if !h.going.Empty() {
		a.continued(j, h.going)
		h.going = wire.RankSet{}
	}
	for _, g := range h.outs {
		a.rankOutput(g)
	}
	h.outs = nil
	if len(h.stops) > 0 {
		a.stopped(j, h.stops)
		h.stops = nil
	}
}

// event takes one event of the tree: output, stops and ranks that run
// are held; an end or a loss is told at once, after what was held.
func (a *adapter) event(j *job, h *held, ev client.Event) {
	if ev.Op == wire.EventOutput {
		h.hold(a.opts.Window)
		h.outs = mergeOutput(h.outs, ev.Group)
		return
	}
	j.repl.feed(ev)
	switch ev.Op {
	case wire.EventStopped:
		st, err := op.Stopped.DecodeBody(ev.Group.Body)
		if err != nil {
			a.output("stderr", fmt.Sprintf("[%v] a stop sdm could not read: %v\n", ev.Group.Ranks, err))
			return
		}
		if msg, ok := a.bps.logpoint(st.Breakpoint); ok {
			go a.logAndGo(j, ev.Group.Ranks, msg)
			return
		}
		h.hold(a.opts.Window)
		h.stops = addStop(h.stops, stop{ranks: ev.Group.Ranks, state: st, body: ev.Group.Body})
		if j.state.stopped(ev.Group.Ranks).Empty() {
			a.flush(j, h)
		}
	case wire.EventRunning:
		// The ranks a continue sets going tell it one by one: one
		// continued event for them all, after the stops held before.
		if len(h.stops) > 0 {
			a.flush(j, h)
		}
		h.hold(a.opts.Window)
		j.state.ran(ev.Group.Ranks)
		a.forget(ev.Group.Ranks)
		h.going = h.going.Union(ev.Group.Ranks)
	default:
		a.flush(j, h)
		a.ended(j, ev)
	}
}

// ended tells the client of ranks that exited or were lost, and of the
// job's end with the last of them.
func (a *adapter) ended(j *job, ev client.Event) {
	switch ev.Op {
	case wire.EventExited:
		st, _ := op.Exited.DecodeBody(ev.Group.Body)
		if j.state.exited(ev.Group.Ranks) {
			a.send(&godap.ExitedEvent{Event: godap.Event{Event: "exited"}, Body: godap.ExitedEventBody{ExitCode: st.Code}})
			if j.state.terminate() {
				a.send(&godap.TerminatedEvent{Event: godap.Event{Event: "terminated"}})
			}
		}
	case wire.EventLost, wire.EventError:
		reason, _ := op.Lost.DecodeBody(ev.Group.Body)
		a.output("stderr", fmt.Sprintf("[%v] %s: %s\n", ev.Group.Ranks, ev.Op, reason))
		if ev.Op == wire.EventLost && j.state.exited(ev.Group.Ranks) && j.state.terminate() {
			a.send(&godap.TerminatedEvent{Event: godap.Event{Event: "terminated"}})
		}
	}
}

// mergeOutput adds g to the output held: to the group that printed the
// same text on the same stream, unless a line held after that group is
// of g's ranks (g would go before it, out of its ranks' order); else
// after the others.
func mergeOutput(outs []wire.Group, g wire.Group) []wire.Group {
	for i := len(outs) - 1; i >= 0; i-- {
		if string(outs[i].Body) == string(g.Body) {
			outs[i].Ranks = outs[i].Ranks.Union(g.Ranks)
			return outs
		}
		if outs[i].Ranks.Intersects(g.Ranks) {
			break
		}
	}
	return append(outs, g)
}

// addStop adds s to the stops held: to the group that stopped the same
// way (the ranks of one stop tell it one by one at first, before the
// tree's nodes merge them), else after the others.
func addStop(stops []stop, s stop) []stop {
	for i := range stops {
		if string(stops[i].body) == string(s.body) {
			stops[i].ranks = stops[i].ranks.Union(s.ranks)
			return stops
		}
	}
	return append(stops, s)
}

// continued tells the client of ranks that went on, in one event.
func (a *adapter) continued(j *job, ranks wire.RankSet) {
	live := j.state.live()
	a.send(&godap.ContinuedEvent{Event: godap.Event{Event: "continued"}, Body: godap.ContinuedEventBody{
		ThreadId: ranks.Min() + 1, AllThreadsContinued: ranks.Intersect(live).Equal(live)}})
}

// stopped tells the client of ranks that stopped, in one event: the
// biggest group's first rank is the thread to show, and the text says
// where every group is.
func (a *adapter) stopped(j *job, stops []stop) {
	var moved wire.RankSet
	for _, s := range stops {
		moved = moved.Union(s.ranks)
	}
	a.forget(moved)
	big := stops[0]
	var where []string
	for _, s := range stops {
		if s.ranks.Count() > big.ranks.Count() {
			big = s
		}
		where = append(where, fmt.Sprintf("%s %v %s", plural(s.ranks), s.ranks, describeStop(s.state)))
	}
	reason, hit := a.reason(j, big.state)
	body := godap.StoppedEventBody{Reason: reason, ThreadId: big.ranks.Min() + 1, AllThreadsStopped: j.state.moving().Empty(),
		Description: describeStop(big.state), Text: strings.Join(where, "; ")}
	if hit != 0 {
		body.HitBreakpointIds = []int{hit}
	}
	a.send(&godap.StoppedEvent{Event: godap.Event{Event: "stopped"}, Body: body})
}

// reason is DAP's name for why a rank stopped, and the breakpoint it hit.
func (a *adapter) reason(j *job, st wire.State) (string, int) {
	switch {
	case st.Reason == "breakpoint-hit" && j.state.isEntry(st.Breakpoint):
		return "entry", 0
	case st.Reason == "breakpoint-hit":
		return "breakpoint", st.Breakpoint // the client's id is the ranks' number
	case strings.HasPrefix(st.Reason, "watchpoint"), strings.HasPrefix(st.Reason, "read-watchpoint"), strings.HasPrefix(st.Reason, "access-watchpoint"):
		return "data breakpoint", 0
	case st.Reason == "end-stepping-range", st.Reason == "function-finished", st.Reason == "location-reached":
		return "step", 0
	case st.Reason == "signal-received" && (st.Signal == "SIGINT" || st.Signal == "SIGSTOP" || st.Signal == "0"):
		return "pause", 0
	case st.Reason == "signal-received":
		return "exception", 0
	}
	return "pause", 0
}

// describeStop says where a rank stopped: "in pass at ring.c:8".
func describeStop(st wire.State) string {
	at := "in " + orDefault(st.Frame.Func, "??")
	if st.Frame.File != "" {
		at += fmt.Sprintf(" at %s:%d", st.Frame.File, st.Frame.Line)
	}
	if st.Signal != "" && st.Reason == "signal-received" {
		at += " (" + st.Signal + ")"
	}
	return at
}

func plural(r wire.RankSet) string {
	if r.Count() == 1 {
		return "rank"
	}
	return "ranks"
}

// rankOutput sends what ranks wrote, each line after its ranks.
func (a *adapter) rankOutput(g wire.Group) {
	out, err := op.Output.DecodeBody(g.Body)
	if err != nil || out.Text == "" {
		return
	}
	category := "stdout"
	if out.Stream == "stderr" {
		category = "stderr"
	}
	var b strings.Builder
	for line := range strings.Lines(out.Text) {
		fmt.Fprintf(&b, "[%v] %s", g.Ranks, line)
	}
	if !strings.HasSuffix(out.Text, "\n") {
		b.WriteByte('\n')
	}
	a.output(category, b.String())
}

// logAndGo prints a logpoint's message for the ranks that reached it,
// its {expressions} evaluated in each, and lets them go on.
func (a *adapter) logAndGo(j *job, ranks wire.RankSet, msg string) {
	text, exprs := splitLogMessage(msg)
	values := map[string][]wire.Group{}
	if len(exprs) > 0 {
		groups, err := j.s.Command(a.ctx, ranks, wire.OpEvaluate, wire.MustEncode(wire.Exprs{Exprs: exprs}), a.opts.Timeout)
		if err == nil {
			values[""] = groups
		}
	}
	for _, line := range logLines(ranks, text, exprs, values[""]) {
		a.output("console", line)
	}
	a.setGoing(j, ranks, wire.OpCont, nil)
}
