package dap

import (
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	godap "github.com/google/go-dap"

	"github.com/sdm-hpc/sdm/op"
	"github.com/sdm-hpc/sdm/wire"
)

// Kinds of variable references.
const (
	scopeLocals = iota
	scopeArgs
	members // the members of a value, as gdb's variable objects show them
)

// place is a frame of a rank's thread: thread 0 is the thread the
// rank's debugger has selected.
type place struct{ rank, thread, level int }

// ref is what a variables reference stands for.
type ref struct {
	place
	kind int
	expr string   // the expression of the variable the members are of
	path []string // the members' keys down to the value (members)
}

// handles number the frames and variables the client saw; those of a
// rank last until it moves (DAP's rule: while its thread stays stopped),
// when forget drops them. The other ranks' stay: a rank that stops after
// the others (after the window that gathers stops) leaves theirs valid.
type handles struct {
	frames []place
	refs   []ref
	// current is the selected thread of each multi-threaded rank as the
	// last threads request found it: the thread shown as rank + 1.
	current map[int]int
}

func newHandles() *handles { return &handles{current: make(map[int]int)} }

// forget drops the frames and variables of ranks, which moved.
func (a *adapter) forget(ranks wire.RankSet) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.handles.forget(ranks)
}

// forget drops the handles of ranks: their numbers stay taken, so that
// a client that asks for one gets an error, not another frame. Once
// every handle is dropped the numbering starts again.
func (h *handles) forget(ranks wire.RankSet) {
	live := false
	for i, p := range h.frames {
		if p.rank >= 0 && ranks.Contains(p.rank) {
			h.frames[i] = place{rank: -1}
		}
		live = live || h.frames[i].rank >= 0
	}
	for i, r := range h.refs {
		if r.rank >= 0 && ranks.Contains(r.rank) {
			h.refs[i] = ref{place: place{rank: -1}}
		}
		live = live || h.refs[i].rank >= 0
	}
	for r := range h.current {
		if ranks.Contains(r) {
			delete(h.current, r)
		}
	}
	if !live {
		h.frames, h.refs = nil, nil
	}
}

func (a *adapter) frameID(p place) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.handles.frames = append(a.handles.frames, p)
	return len(a.handles.frames)
}

func (a *adapter) frame(id int) (place, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if id < 1 || id > len(a.handles.frames) || a.handles.frames[id-1].rank < 0 {
		return place{}, fmt.Errorf("no frame %d (frames last until a rank moves)", id)
	}
	return a.handles.frames[id-1], nil
}

func (a *adapter) refID(r ref) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.handles.refs = append(a.handles.refs, r)
	return len(a.handles.refs)
}

func (a *adapter) ref(id int) (ref, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if id < 1 || id > len(a.handles.refs) || a.handles.refs[id-1].rank < 0 {
		return ref{}, fmt.Errorf("no variables %d (they last until a rank moves)", id)
	}
	return a.handles.refs[id-1], nil
}

// one runs op on one rank and returns its answer, or its error naming the rank.
func (a *adapter) one(j *job, rank int, name string, body []byte) ([]byte, error) {
	groups, err := j.s.Command(a.ctx, wire.Single(rank), name, body, a.opts.Timeout)
	if err != nil {
		return nil, err
	}
	for _, g := range groups {
		if g.Status == wire.StatusOK {
			return g.Body, nil
		}
		return nil, fmt.Errorf("rank %d: %s: %s", rank, name, strings.TrimSpace(string(g.Body)))
	}
	return nil, fmt.Errorf("rank %d: %s: no answer", rank, name)
}

// stackTrace is a rank's stack, innermost frame first.
func (a *adapter) stackTrace(m *godap.StackTraceRequest) error {
	j, err := a.running()
	if err != nil {
		return err
	}
	at, err := a.threadOf(j, m.Arguments.ThreadId)
	if err != nil {
		return err
	}
	if err := a.selectThread(j, at); err != nil {
		return err
	}
	body, err := a.one(j, at.rank, wire.OpWhere, nil)
	if err != nil {
		return err
	}
	stack, err := op.Where.DecodeAnswer(body)
	if err != nil {
		return err
	}
	frames := stack.Frames[min(m.Arguments.StartFrame, len(stack.Frames)):]
	if n := m.Arguments.Levels; n > 0 && n < len(frames) {
		frames = frames[:n]
	}
	out := []godap.StackFrame{}
	for i, f := range frames {
		at.level = m.Arguments.StartFrame + i
		sf := godap.StackFrame{Id: a.frameID(at), Name: orDefault(f.Func, "??"), Line: f.Line, Column: 1}
		if f.File != "" {
			path := j.sourcePath(f.File)
			sf.Source = &godap.Source{Name: filepath.Base(f.File), Path: path}
		} else {
			sf.PresentationHint = "subtle"
			if f.From != "" {
				sf.Name += " (" + filepath.Base(f.From) + ")"
			}
		}
		out = append(out, sf)
	}
	return a.send(&godap.StackTraceResponse{Response: ok(m.Request), Body: godap.StackTraceResponseBody{StackFrames: out, TotalFrames: len(stack.Frames)}})
}

// scopes are a frame's locals and arguments.
func (a *adapter) scopes(m *godap.ScopesRequest) error {
	if _, err := a.running(); err != nil {
		return err
	}
	at, err := a.frame(m.Arguments.FrameId)
	if err != nil {
		return err
	}
	return a.send(&godap.ScopesResponse{Response: ok(m.Request), Body: godap.ScopesResponseBody{Scopes: []godap.Scope{
		{Name: "Locals", PresentationHint: "locals", VariablesReference: a.refID(ref{place: at, kind: scopeLocals})},
		{Name: "Arguments", PresentationHint: "arguments", VariablesReference: a.refID(ref{place: at, kind: scopeArgs})},
	}}})
}

// selectFrame makes a place's thread and frame the selected ones of its
// rank's debugger, where variables and expressions are read.
func (a *adapter) selectFrame(j *job, at place) error {
	if err := a.selectThread(j, at); err != nil {
		return err
	}
	_, err := a.one(j, at.rank, wire.OpFrame, wire.MustEncode(wire.Count{N: at.level}))
	return err
}

// variables lists a scope's variables or a value's members, as gdb's
// variable objects show them (wire.VarQuery).
func (a *adapter) variables(m *godap.VariablesRequest) error {
	j, err := a.running()
	if err != nil {
		return err
	}
	r, err := a.ref(m.Arguments.VariablesReference)
	if err != nil {
		return err
	}
	q := wire.VarQuery{Scope: map[int]string{scopeLocals: "locals", scopeArgs: "args"}[r.kind]}
	if r.kind == members {
		q = wire.VarQuery{Expr: r.expr, Path: r.path, From: m.Arguments.Start, Count: m.Arguments.Count}
	}
	list, err := a.varObjs(j, r.place, q)
	if err != nil {
		return err
	}
	vars := []godap.Variable{}
	for _, v := range list {
		vars = append(vars, a.variable(r, v))
	}
	return a.send(&godap.VariablesResponse{Response: ok(m.Request), Body: godap.VariablesResponseBody{Variables: vars}})
}

// varObjs asks a frame's rank for variables.
func (a *adapter) varObjs(j *job, at place, q wire.VarQuery) ([]wire.VarObj, error) {
	if err := a.selectFrame(j, at); err != nil {
		return nil, err
	}
	body, err := a.one(j, at.rank, wire.OpVarObjs, wire.MustEncode(q))
	if err != nil {
		return nil, err
	}
	return op.VarObjs.DecodeAnswer(body)
}

// variable is a variable as the client shows it, with a reference to its
// members when it has some.
func (a *adapter) variable(in ref, v wire.VarObj) godap.Variable {
	dv := godap.Variable{Name: v.Name, Value: v.Value, Type: v.Type, EvaluateName: v.Expr}
	if v.Members != 0 {
		r := ref{place: in.place, kind: members, expr: v.Expr}
		if in.kind == members {
			r.expr, r.path = in.expr, append(slices.Clip(in.path), v.Key)
		}
		dv.VariablesReference = a.refID(r)
	}
	if strings.HasPrefix(v.Value, "0x") {
		dv.MemoryReference = memoryRef(v.Value, in.rank)
	}
	return dv
}

// memoryRef names the memory at a pointer's value on rank: "0x601040@3".
func memoryRef(value string, rank int) string {
	addr, _, _ := strings.Cut(value, " ")
	return fmt.Sprintf("%s@%d", addr, rank)
}

// evaluateOn evaluates expr in a frame.
func (a *adapter) evaluateOn(j *job, at place, expr string) (string, error) {
	rank := at.rank
	if err := a.selectFrame(j, at); err != nil {
		return "", err
	}
	body, err := a.one(j, rank, wire.OpEvaluate, wire.MustEncode(wire.Exprs{Exprs: []string{expr}}))
	if err != nil {
		return "", err
	}
	values, err := op.Evaluate.DecodeAnswer(body)
	if err != nil || len(values) != 1 {
		return "", fmt.Errorf("rank %d: %s: no value", rank, expr)
	}
	if values[0].Error != "" {
		return "", fmt.Errorf("rank %d: %s", rank, values[0].Error)
	}
	return values[0].Value, nil
}

// evaluate answers the debug console (sdm's console commands, or an
// expression in the selected frame's rank), hovers and watches.
func (a *adapter) evaluate(m *godap.EvaluateRequest) error {
	j, err := a.running()
	if err != nil {
		return err
	}
	args := m.Arguments
	if args.Context == "repl" && j.repl.takes(args.Expression) {
		text, err := j.repl.exec(a.ctx, args.Expression)
		if err != nil {
			return err
		}
		return a.send(&godap.EvaluateResponse{Response: ok(m.Request), Body: godap.EvaluateResponseBody{Result: text}})
	}
	at := place{rank: j.ranks.Min()}
	if args.FrameId != 0 {
		if at, err = a.frame(args.FrameId); err != nil {
			return err
		}
	}
	value, err := a.evaluateOn(j, at, args.Expression)
	if err != nil {
		return err
	}
	// An expression whose value has members opens as a variable does.
	body := godap.EvaluateResponseBody{Result: value}
	if self, err := a.varObjs(j, at, wire.VarQuery{Expr: args.Expression, Count: -1}); err == nil && len(self) == 1 && self[0].Members != 0 {
		body.VariablesReference = a.refID(ref{place: at, kind: members, expr: args.Expression})
	}
	return a.send(&godap.EvaluateResponse{Response: ok(m.Request), Body: body})
}

// setVariable assigns to a variable of a scope or a member of a value.
func (a *adapter) setVariable(m *godap.SetVariableRequest) error {
	j, err := a.running()
	if err != nil {
		return err
	}
	r, err := a.ref(m.Arguments.VariablesReference)
	if err != nil {
		return err
	}
	expr := m.Arguments.Name
	if r.kind == members {
		// The member's expression, where gdb can tell it.
		list, err := a.varObjs(j, r.place, wire.VarQuery{Expr: r.expr, Path: r.path})
		if err != nil {
			return err
		}
		expr = ""
		for _, v := range list {
			if v.Name == m.Arguments.Name {
				expr = v.Expr
			}
		}
	}
	if expr == "" {
		return fmt.Errorf("%s cannot be set here: set it in a watch of its expression", m.Arguments.Name)
	}
	if err := a.selectFrame(j, r.place); err != nil {
		return err
	}
	body, err := a.one(j, r.rank, wire.OpPrint, wire.MustEncode(wire.Expr{Expr: expr + " = " + m.Arguments.Value}))
	if err != nil {
		return err
	}
	text, err := op.Print.DecodeAnswer(body)
	if err != nil {
		return err
	}
	return a.send(&godap.SetVariableResponse{Response: ok(m.Request), Body: godap.SetVariableResponseBody{Value: text.Text}})
}

// readMemory reads a rank's memory at a reference of memoryRef's.
func (a *adapter) readMemory(m *godap.ReadMemoryRequest) error {
	j, err := a.running()
	if err != nil {
		return err
	}
	addr, rankText, found := strings.Cut(m.Arguments.MemoryReference, "@")
	rank := j.ranks.Min()
	if found {
		if rank, err = strconv.Atoi(rankText); err != nil || !j.ranks.Contains(rank) {
			return fmt.Errorf("memory reference %q: no rank %q", m.Arguments.MemoryReference, rankText)
		}
	}
	if m.Arguments.Count <= 0 || m.Arguments.Count > 1<<20 {
		return fmt.Errorf("readMemory: count %d: want 1 to %d bytes", m.Arguments.Count, 1<<20)
	}
	start := fmt.Sprintf("(char *)(%s) + %d", addr, m.Arguments.Offset)
	body, err := a.one(j, rank, wire.OpMemRead, wire.MustEncode(wire.Memory{Addr: start, Count: m.Arguments.Count}))
	if err != nil {
		return err
	}
	mem, err := op.MemRead.DecodeAnswer(body)
	if err != nil {
		return err
	}
	data, err := hex.DecodeString(mem.Hex)
	if err != nil {
		return fmt.Errorf("rank %d: memory at %s: %v", rank, start, err)
	}
	return a.send(&godap.ReadMemoryResponse{Response: ok(m.Request), Body: godap.ReadMemoryResponseBody{
		Address: orDefault(mem.Addr, addr), Data: base64.StdEncoding.EncodeToString(data), UnreadableBytes: m.Arguments.Count - len(data)}})
}

// resume runs op (continue, next, step, finish) on the stopped ranks the
// thread stands for: all of them, or its rank alone (allRanks false).
func (a *adapter) resume(r godap.Request, thread int, name string, body []byte) error {
	j, err := a.running()
	if err != nil {
		return err
	}
	at, err := a.threadOf(j, thread)
	if err != nil {
		return err
	}
	ranks := j.state.still()
	if !j.allRanks {
		ranks = ranks.Intersect(wire.Single(at.rank))
	}
	if ranks.Empty() {
		return errors.New("no rank is stopped")
	}
	if ranks.Contains(at.rank) {
		// The thread the editor shows moves on its rank; the others'
		// selected threads move on theirs.
		if err := a.selectThread(j, at); err != nil {
			return err
		}
	}
	groups, err := a.setGoing(j, ranks, name, body)
	if err != nil {
		return err
	}
	if err := wire.Failures(groups, name, nil); err != nil {
		return err
	}
	all := ranks.Equal(j.state.live())
	switch r.Command {
	case "continue":
		return a.send(&godap.ContinueResponse{Response: ok(r), Body: godap.ContinueResponseBody{AllThreadsContinued: all}})
	case "next":
		return a.send(&godap.NextResponse{Response: ok(r)})
	case "stepIn":
		return a.send(&godap.StepInResponse{Response: ok(r)})
	}
	return a.send(&godap.StepOutResponse{Response: ok(r)})
}

// setGoing sends op to ranks it sets going (continue, run, a step),
// marked running first: the first of them to stop is not told as the
// last one while another has yet to tell that it runs (its running event
// can come after a quicker rank's stop), so allThreadsStopped waits for
// every one. Those the op failed on are marked stopped again.
func (a *adapter) setGoing(j *job, ranks wire.RankSet, name string, body []byte) ([]wire.Group, error) {
	j.state.ran(ranks)
	groups, err := j.s.Command(a.ctx, ranks, name, body, a.opts.Timeout)
	j.state.failed(groups)
	return groups, err
}

// pause halts the running ranks the thread stands for.
func (a *adapter) pause(m *godap.PauseRequest) error {
	j, err := a.running()
	if err != nil {
		return err
	}
	ranks := j.state.moving()
	if !j.allRanks {
		at, err := a.threadOf(j, m.Arguments.ThreadId)
		if err != nil {
			return err
		}
		ranks = ranks.Intersect(wire.Single(at.rank))
	}
	if !ranks.Empty() {
		groups, err := j.s.Command(a.ctx, ranks, wire.OpHalt, nil, a.opts.Timeout)
		if err != nil {
			return err
		}
		if err := wire.Failures(groups, "halt", nil); err != nil {
			return err
		}
	}
	return a.send(&godap.PauseResponse{Response: ok(m.Request)})
}
