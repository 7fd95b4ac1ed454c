package gdbmi

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/sdm-hpc/sdm/backend"
	"github.com/sdm-hpc/sdm/wire"
)

// A tracepoint is a breakpoint whose hits the backend takes itself: it
// evaluates the expressions, tells them (EventTraced) and continues the
// rank, so that the rank is stopped only for the evaluation and nobody
// else hears of the stop. gdb's dprintf would spare the stop's records,
// but prints only by printf formats, which need each expression's type
// before the first pass (gdb 13 has no %V), and a breakpoint's own
// commands would still tell gdb's *stopped and *running.

// errHanded ends a look's wait for its interrupt's stop when a pass was
// handed to it instead (lookHanded).
var errHanded = errors.New("a tracepoint's pass was handed to the look")

// errKilling is a resume of a rank whose process a shared gdb's view is
// killing (hostkill.go).
var errKilling = errors.New("the process is being killed")

// lateWait bounds how long after a look took a pass's stop a SIGINT stop
// is taken for the look's interrupt.
const lateWait = time.Second

// lateStop says whether a stop is the late one of a look's
// interrupt that a pass met (lookHanded), and forgets that one came.
func (b *Backend) lateStop(st wire.State) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	late := st.Reason == "signal-received" && st.Signal == "SIGINT" && time.Since(b.lateInterrupt) < lateWait
	if late {
		b.lateInterrupt = time.Time{}
	}
	return late
}

// tracepoints are a rank's tracepoints by breakpoint number, and the
// passes each has made in the rank's process.
type tracepoints struct {
	exprs  map[int][]string
	passes map[int]int
}

// newProcess starts the count of passes again, for a new process.
func (t *tracepoints) newProcess() { clear(t.passes) }

// setTrace makes breakpoint n a tracepoint of exprs, or none; b.mu is
// held.
func (t *tracepoints) setTrace(n int, tracepoint bool, exprs []string) {
	if !tracepoint {
		t.dropTraces([]int{n})
		return
	}
	if t.exprs == nil {
		t.exprs, t.passes = map[int][]string{}, map[int]int{}
	}
	t.exprs[n] = append([]string{}, exprs...)
	delete(t.passes, n)
}

// dropTraces forgets the tracepoints among ids (all for none); b.mu is
// held.
func (t *tracepoints) dropTraces(ids []int) {
	if len(ids) == 0 {
		clear(t.exprs)
		clear(t.passes)
	}
	for _, n := range ids {
		delete(t.exprs, n)
		delete(t.passes, n)
	}
}

// traced tells a listed breakpoint that is a tracepoint as one, with its
// expressions; b.mu is held.
func (t *tracepoints) traced(bp wire.Breakpoint) wire.Breakpoint {
	if exprs, ok := t.exprs[bp.Number]; ok {
		bp.Type, bp.Trace = "tracepoint", append([]string{}, exprs...)
	}
	return bp
}

// pass takes a stop at a tracepoint: the expressions evaluated in the
// stopped thread's frame, told, and the rank let go on. It says whether
// it took the stop; any other is told as a stop, as is one after which
// the rank could not go on.
func (b *Backend) pass(g conn, st wire.State) bool {
	if st.Reason != "breakpoint-hit" {
		return false
	}
	b.mu.Lock()
	exprs, ok := b.exprs[st.Breakpoint]
	if ok {
		b.passes[st.Breakpoint]++
	}
	n := b.passes[st.Breakpoint]
	b.mu.Unlock()
	if !ok {
		return false
	}
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	tr := wire.Traced{Breakpoint: st.Breakpoint, Pass: n, Exprs: exprs, Values: make([]string, len(exprs))}
	for i, e := range exprs {
		r, _, err := g.Run(ctx, "-data-evaluate-expression "+Quote(e))
		if err != nil {
			tr.Values[i] = "<error: " + err.Error() + ">"
		} else {
			tr.Values[i] = r.Results.S("value")
		}
	}
	// A pass is news even while a where looks at the rank in passing,
	// whose own stop and go on are not: the values are kept.
	b.mu.Lock()
	closed := b.closed
	b.mu.Unlock()
	if !closed {
		b.events <- backend.Event{Op: wire.EventTraced, Body: wire.MustEncode(tr)}
	}
	b.mu.Lock()
	handover := b.lookHanded != nil
	if handover {
		// A look waits for its interrupt, which gdb dropped if it came
		// during the pass: the look takes the rank here (peek.go).
		b.state, b.held = st, false
		b.report()
		b.lookHanded(errHanded)
		b.lookHanded = nil
	}
	b.mu.Unlock()
	if handover {
		return true
	}
	if err := b.continueQuietly(g); errors.Is(err, errKilling) {
		return true // the kill's end is the news
	} else if err != nil {
		// The rank stays where it is: that is news, with the cause.
		b.emit(wire.EventWarning, []byte("tracepoint "+strconv.Itoa(st.Breakpoint)+": could not go on after a pass: "+err.Error()))
		return false
	}
	return true
}
