package console

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/sdm-hpc/sdm/op"
	"github.com/sdm-hpc/sdm/wire"
)

// deadlock reads why a job hangs from its ranks' stacks: which MPI call
// each rank's main thread waits in, and where the ranks that wait in none
// are. Stacks name the call but not its peer, tag or communicator (those
// are in the MPI library's queues), so it tells what stacks alone tell:
// ranks outside MPI while others wait (the usual root of a hang),
// collectives that do not match, and every rank blocked in
// point-to-point calls (a cycle, whose ranks the queues would name).

// MPICall is an MPI routine a frame is in, by its C name (MPI_Recv), and
// how it waits: "collective" (every rank of a communicator must call
// it), "point-to-point" (a send, receive or probe that needs its peer),
// "completion" (a wait on requests), or "" for a routine that does not
// block.
type MPICall struct {
	Name, Kind string
}

// blocking are the MPI routines that wait for other ranks, by their name
// without MPI_, in lower case.
var blocking = map[string]string{
	"barrier": "collective", "bcast": "collective", "reduce": "collective", "allreduce": "collective",
	"gather": "collective", "gatherv": "collective", "scatter": "collective", "scatterv": "collective",
	"allgather": "collective", "allgatherv": "collective", "alltoall": "collective", "alltoallv": "collective",
	"alltoallw": "collective", "reduce_scatter": "collective", "reduce_scatter_block": "collective",
	"scan": "collective", "exscan": "collective", "comm_split": "collective", "comm_split_type": "collective",
	"comm_dup": "collective", "comm_create": "collective", "cart_create": "collective", "win_fence": "collective",
	"init": "collective", "init_thread": "collective", "finalize": "collective",
	"send": "point-to-point", "ssend": "point-to-point", "bsend": "point-to-point", "rsend": "point-to-point",
	"recv": "point-to-point", "sendrecv": "point-to-point", "sendrecv_replace": "point-to-point",
	"probe": "point-to-point", "mprobe": "point-to-point", "mrecv": "point-to-point",
	"wait": "completion", "waitall": "completion", "waitany": "completion", "waitsome": "completion",
}

// mpiCall names the MPI routine of a frame's function: the C binding
// (MPI_Recv), its profiling name (PMPI_Recv, which Open MPI's MPI_Recv is
// an alias of), and the Fortran bindings (mpi_recv_, MPI_RECV,
// mpi_recv_f08, Open MPI's ompi_recv_f). ok is false outside MPI's
// interface (the library's own functions included).
func mpiCall(fn string) (MPICall, bool) {
	f := strings.ToLower(fn)
	switch {
	case strings.HasPrefix(f, "pmpi_"):
		f = f[1:]
	case strings.HasPrefix(f, "ompi_") && (strings.HasSuffix(f, "_f") || strings.HasSuffix(f, "_f08")):
		f = "mpi_" + strings.TrimPrefix(f, "ompi_")
	}
	if !strings.HasPrefix(f, "mpi_") || strings.HasPrefix(f, "mpi_t_") {
		return MPICall{}, false
	}
	f = strings.TrimRight(strings.TrimPrefix(f, "mpi_"), "_")
	for _, suffix := range []string{"_f08ts", "_f08", "_f", "_c"} {
		f = strings.TrimSuffix(f, suffix)
	}
	if f == "" {
		return MPICall{}, false
	}
	return MPICall{Name: "MPI_" + strings.ToUpper(f[:1]) + f[1:], Kind: blocking[f]}, true
}

// Wait is ranks whose main thread waits in one MPI call at one place.
type Wait struct {
	Ranks wire.RankSet
	Call  MPICall
	At    wire.Frame // the caller's frame: where the program called it
}

// Busy is ranks whose main thread is outside MPI's blocking calls, at
// one place.
type Busy struct {
	Ranks wire.RankSet
	At    wire.Frame // the innermost frame
	Code  wire.Frame // the innermost frame with a source file, if At has none
	Moved bool       // the ranks' stacks changed between samples
}

// Diagnosis is what the stacks tell about a hang, and the lines that say
// it.
type Diagnosis struct {
	Waits []Wait
	Busy  []Busy
	Lines []string
	// Graph is the wait-for graph in Graphviz's language, drawn from the
	// ranks' queues; "" without them.
	Graph string
}

// Diagnose reads the main threads' paths of a stack tree (roots whose
// outermost frame is main: stacks are cut there). A rank waits when
// every path of its main thread is in a blocking MPI call, all at one
// place; a rank seen anywhere else (outside MPI, in a call that does not
// block, or at two places over the samples) is busy. moved are the ranks
// whose stacks changed between samples.
func Diagnose(roots []*StackNode, moved wire.RankSet) Diagnosis {
	type place struct {
		call   MPICall
		at     wire.Frame
		code   wire.Frame
		inCall bool
	}
	var places []place
	var ranks []wire.RankSet
	add := func(p place, r wire.RankSet) {
		places = append(places, p)
		ranks = append(ranks, r)
	}
	var walk func(n *StackNode, parent, code wire.Frame)
	walk = func(n *StackNode, parent, code wire.Frame) {
		if call, ok := mpiCall(n.Frame.Func); ok {
			if call.Kind != "" {
				add(place{call: call, at: parent, inCall: true}, n.Ranks)
			} else {
				add(place{at: n.Frame, code: parent}, n.Ranks)
			}
			return
		}
		if n.Frame.File != "" {
			code = n.Frame
		}
		ends := n.Ranks
		for _, c := range n.Children {
			walk(c, n.Frame, code)
			ends = ends.Minus(c.Ranks)
		}
		if !ends.Empty() {
			add(place{at: n.Frame, code: code}, ends)
		}
	}
	for _, r := range mainRoots(roots) {
		walk(r, wire.Frame{}, wire.Frame{})
	}
	// A rank seen at two places is busy, wherever those are.
	seen, twice := wire.RankSet{}, wire.RankSet{}
	for _, r := range ranks {
		twice = twice.Union(seen.Intersect(r))
		seen = seen.Union(r)
	}
	var d Diagnosis
	for i, p := range places {
		r := ranks[i]
		if p.inCall {
			if w := r.Minus(twice); !w.Empty() {
				d.Waits = append(d.Waits, Wait{Ranks: w, Call: p.call, At: p.at})
			}
			if m := r.Intersect(twice); !m.Empty() {
				d.Busy = append(d.Busy, Busy{Ranks: m, At: wire.Frame{Func: p.call.Name}, Code: p.at, Moved: true})
			}
			continue
		}
		code := p.code
		if p.at.File != "" {
			code = wire.Frame{}
		}
		d.Busy = append(d.Busy, Busy{Ranks: r, At: p.at, Code: code, Moved: r.Intersect(moved).Equal(r)})
	}
	d.Busy = mergeBusy(d.Busy)
	d.Waits = mergeWaits(d.Waits)
	d.Lines = d.lines()
	return d
}

// mainRoots are the roots of the main threads' paths: main's (stacks
// are cut there), or, where gdb stops a Fortran program's stack at its
// main program (named as the program), every root but those of threads
// the program started.
func mainRoots(roots []*StackNode) []*StackNode {
	var mains, others []*StackNode
	for _, r := range roots {
		switch r.Frame.Func {
		case "main":
			mains = append(mains, r)
		case "start_thread", "clone", "clone3", "__clone", "__clone3":
		default:
			others = append(others, r)
		}
	}
	if len(mains) > 0 {
		return mains
	}
	return others
}

// mergeWaits makes one wait of the ranks in one call at one place,
// whichever binding they called it by (PMPI_Allreduce in C, ompi_allreduce_f
// in Fortran).
func mergeWaits(waits []Wait) []Wait {
	var out []Wait
	for _, w := range waits {
		i := slices.IndexFunc(out, func(o Wait) bool { return o.Call == w.Call && o.At == w.At })
		if i < 0 {
			out = append(out, w)
			continue
		}
		out[i].Ranks = out[i].Ranks.Union(w.Ranks)
	}
	slices.SortFunc(out, func(a, b Wait) int { return a.Ranks.Min() - b.Ranks.Min() })
	return out
}

// mergeBusy makes one entry of a rank seen busy at several places: its
// first place stands for it (the rank is moving).
func mergeBusy(busy []Busy) []Busy {
	slices.SortStableFunc(busy, func(a, b Busy) int { return a.Ranks.Min() - b.Ranks.Min() })
	var out []Busy
	var taken wire.RankSet
	for _, b := range busy {
		b.Ranks = b.Ranks.Minus(taken)
		if b.Ranks.Empty() {
			continue
		}
		taken = taken.Union(b.Ranks)
		out = append(out, b)
	}
	return out
}

// lines says the diagnosis in a few lines, the likeliest cause first.
func (d Diagnosis) lines() []string {
	var waiting wire.RankSet
	collectives := map[string]bool{}
	var pointToPoint bool
	for _, w := range d.Waits {
		waiting = waiting.Union(w.Ranks)
		if w.Call.Kind == "collective" {
			collectives[w.Call.Name] = true
		} else {
			pointToPoint = true
		}
	}
	var lines []string
	for _, w := range d.Waits {
		lines = append(lines, fmt.Sprintf("%s %v %s in %s%s", rankWord(w.Ranks), w.Ranks, waitVerb(w.Ranks), w.Call.Name, atText(w.At)))
	}
	for _, b := range d.Busy {
		lines = append(lines, fmt.Sprintf("%s %v %s not waiting in MPI: %s", rankWord(b.Ranks), b.Ranks, isAre(b.Ranks), busyText(b)))
	}
	switch {
	case waiting.Empty() && len(d.Busy) == 0:
		lines = append(lines, "diagnosis: no main thread in the stacks (main not among their frames)")
	case waiting.Empty():
		lines = append(lines, "diagnosis: no rank waits in a blocking MPI call: not an MPI deadlock")
	case len(collectives) > 1:
		names := slices.Sorted(func(yield func(string) bool) {
			for n := range collectives {
				if !yield(n) {
					return
				}
			}
		})
		lines = append(lines, fmt.Sprintf("diagnosis: collectives that do not match (%s): ranks in one wait for ranks in another, should they share a communicator (the queues tell)", strings.Join(names, ", ")))
	case len(d.Busy) > 0:
		var busy wire.RankSet
		for _, b := range d.Busy {
			busy = busy.Union(b.Ranks)
		}
		lines = append(lines, fmt.Sprintf("diagnosis: %s %v %s outside MPI while %s %v %s: the waits likely lead there (the root of the hang)",
			rankWord(busy), busy, isAre(busy), rankWord(waiting), waiting, waitVerb(waiting)))
	case len(collectives) == 1 && pointToPoint:
		lines = append(lines, "diagnosis: ranks in a collective wait for ranks that wait in point-to-point calls: those never reach the collective")
	case len(collectives) == 1:
		lines = append(lines, "diagnosis: every rank is in the same collective: it matches; a hang there is one of its communicator's ranks missing, or the network")
	default:
		lines = append(lines, "diagnosis: every rank waits in point-to-point MPI calls and none is left to match them: a cycle of waits (their peers are in the queues)")
	}
	return lines
}

func rankWord(r wire.RankSet) string { return plural(r.Count(), "rank", "ranks") }

func isAre(r wire.RankSet) string { return plural(r.Count(), "is", "are") }

func waitVerb(r wire.RankSet) string { return plural(r.Count(), "waits", "wait") }

// atText is " at FILE:LINE" (or " from LIBRARY") of a caller's frame.
func atText(f wire.Frame) string {
	switch {
	case f.File != "":
		return fmt.Sprintf(" at %s:%d (%s)", f.File, f.Line, f.Func)
	case f.Func != "":
		return " from " + frameText(f)
	}
	return ""
}

// busyText is where busy ranks are, and whether they moved.
func busyText(b Busy) string {
	s := "in " + frameText(b.At)
	if b.Code.Func != "" {
		s += ", called from " + frameText(b.Code)
	}
	if b.Moved {
		s += " (moving)"
	}
	return s
}

// deadlockUsage is how deadlock is typed.
const deadlockUsage = "deadlock [--samples K] [--interval D] [--dot FILE] [--svg FILE]"

func runDeadlock(ctx context.Context, c *Console, ranks wire.RankSet, args string) error {
	req, err := ParseStacks(args)
	if err != nil || req.Deadlock {
		return usageError("%s", deadlockUsage)
	}
	tree, answered, groups, err := c.sample(ctx, ranks, req.Sample)
	if err != nil {
		return err
	}
	d := c.diagnose(ctx, tree, answered)
	if c.opts.JSON {
		if !answered.Empty() {
			c.emit(map[string]any{"ranks": answered.String(), "count": answered.Count(), "op": "deadlock", "status": "ok", "value": d.JSON()})
		}
	} else if !answered.Empty() {
		c.println(strings.Join(d.Lines, "\n"))
	}
	c.printUnsampled(ctx, groups)
	if (req.Dot != "" || req.SVG != "") && d.Graph == "" {
		return fmt.Errorf("no wait-for graph to draw: the ranks have no queues (sdm debug without --queues=false keeps them)")
	}
	if req.Dot != "" {
		if err := os.WriteFile(req.Dot, []byte(d.Graph), 0o644); err != nil {
			return err
		}
	}
	if req.SVG != "" {
		return writeSVG(ctx, req.SVG, d.Graph)
	}
	return nil
}

// diagnose is deadlock's diagnosis of the ranks' stacks (tree) and of
// the queues of those that answered.
func (c *Console) diagnose(ctx context.Context, tree wire.CallTree, answered wire.RankSet) Diagnosis {
	d := Diagnose(callTreeNodes(tree.Roots), tree.Moved)
	if queues, size := c.queuesOf(ctx, answered); len(queues) > 0 {
		d = d.WithQueues(queues, size)
	}
	return d
}

// queuesOf asks ranks for their queues: those that have them, and the
// world's size they tell.
func (c *Console) queuesOf(ctx context.Context, ranks wire.RankSet) (map[int]wire.Queues, int) {
	groups, err := c.s.Command(ctx, ranks, wire.OpQueues, nil, c.opts.Timeout)
	if err != nil {
		return nil, 0
	}
	queues, size, _ := DecodeQueues(groups)
	return queues, size
}

// DecodeQueues are the answers to queues by rank, the world's size they
// tell, and the groups that hold none. The tree sends ranks whose queues
// differ only in peers and waits as one answer (op.QueueClasses), which
// this unfolds.
func DecodeQueues(groups []wire.Group) (queues map[int]wire.Queues, size int, failed []wire.Group) {
	queues = map[int]wire.Queues{}
	for _, g := range groups {
		q, err := op.Queues.DecodeAnswer(g.Body)
		if g.Status != wire.StatusOK || err != nil {
			failed = append(failed, g)
			continue
		}
		size = max(size, q.Size)
		g.Ranks.Each(func(r int) bool {
			queues[r] = q.Of(r)
			return true
		})
	}
	return queues, size, failed
}

// WithQueues reads the ranks' queues into the diagnosis: the wait-for
// graph's cycles and the ranks outside MPI that others wait for take the
// place of what stacks alone could say.
func (d Diagnosis) WithQueues(queues map[int]wire.Queues, size int) Diagnosis {
	busy := map[int]string{}
	for _, b := range d.Busy {
		b.Ranks.Each(func(r int) bool {
			busy[r] = "not in MPI: " + busyText(b)
			return true
		})
	}
	// A rank whose stack is in a blocking call its queues do not show
	// (read through an MPI's library before the call posted anything) is
	// said to be there, not outside MPI.
	for _, w := range d.Waits {
		w.Ranks.Each(func(r int) bool {
			busy[r] = "in " + w.Call.Name + atText(w.At) + ", which its queues do not show"
			return true
		})
	}
	g := buildWaitFor(withCalls(queues, d.Waits), size)
	d.Graph = g.dot(size, busy)
	found := g.lines(size, busy)
	if len(found) == 0 {
		return d
	}
	d.Lines = d.Lines[:len(d.Lines)-1]
	for _, f := range found {
		d.Lines = append(d.Lines, "diagnosis: "+f)
	}
	return d
}

// JSON is the diagnosis as --json and the editor (sdm/deadlock) give it
// (docs/JSON.md).
func (d Diagnosis) JSON() map[string]any {
	waits := make([]map[string]any, len(d.Waits))
	for i, w := range d.Waits {
		waits[i] = map[string]any{"ranks": w.Ranks.String(), "call": w.Call.Name, "kind": w.Call.Kind,
			"func": w.At.Func, "file": w.At.File, "line": w.At.Line, "from": w.At.From}
	}
	busy := make([]map[string]any, len(d.Busy))
	for i, b := range d.Busy {
		busy[i] = map[string]any{"ranks": b.Ranks.String(), "func": b.At.Func, "file": b.At.File, "line": b.At.Line,
			"from": b.At.From, "caller": b.Code.Func, "caller_file": b.Code.File, "caller_line": b.Code.Line, "moved": b.Moved}
	}
	var found []string
	for _, l := range d.Lines {
		if strings.HasPrefix(l, "diagnosis: ") {
			found = append(found, l)
		}
	}
	return map[string]any{"waits": waits, "busy": busy, "diagnosis": found[0], "diagnoses": found, "lines": d.Lines}
}
