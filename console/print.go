package console

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/sdm-hpc/sdm/client"
	"github.com/sdm-hpc/sdm/wire"
)

// println writes one line (or block) of text. Under --json it is a
// message of the reply of the command that runs, or else a line of its
// own, {"type":"message","message":...}, so that every line stays one
// JSON object.
func (c *Console) println(text string) {
	if c.opts.JSON {
		if !c.addMessage(text) {
			c.write(appendJSON(nil, c.stamp("message", map[string]any{"message": text})))
		}
		return
	}
	c.write(append([]byte(text), '\n'))
}

// emit puts obj, a group of the answer or a note of the console's, in the
// reply of the command that runs, or else prints it as a note of its own.
func (c *Console) emit(obj map[string]any) {
	if !c.add(obj) {
		c.write(appendJSON(nil, c.stamp("note", obj)))
	}
}

// appendJSON appends obj as one line of JSON.
func appendJSON(b []byte, obj map[string]any) []byte {
	line, err := json.Marshal(obj)
	if err != nil {
		line, _ = json.Marshal(map[string]any{"version": JSONVersion, "type": "message", "message": err.Error()})
	}
	return append(append(b, line...), '\n')
}

// write writes whole lines, one writer at a time.
func (c *Console) write(text []byte) {
	if len(text) == 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.prompt != "" {
		// The line editor knows nothing of what is printed over it: the
		// news goes on a line of its own, the prompt after it. (What was
		// typed is still in the editor's line, and shows again as it is
		// edited.)
		text = append(append([]byte(eraseLine), text...), c.prompt...)
	}
	c.out.Write(text)
}

// eraseLine moves to the start of the terminal's line and erases it.
const eraseLine = "\r\033[K"

// prompting tells the console that the terminal shows prompt and waits
// for a line ("" once a line is read).
func (c *Console) prompting(prompt string) {
	c.mu.Lock()
	c.prompt = prompt
	c.mu.Unlock()
}

// note reports a change of console state, such as the focus.
func (c *Console) note(what string, ranks wire.RankSet) {
	if c.opts.JSON {
		c.emit(map[string]any{"note": what, "ranks": ranks.String(), "count": ranks.Count()})
		return
	}
	c.println(fmt.Sprintf("%s [%v]", what, ranks))
}

// printReply prints one group of answers to op; label, when there is
// one, is what the value is of (the expression print evaluated), shown
// before it.
func (c *Console) printReply(op, label string, g wire.Group) {
	if g.Status != wire.StatusOK {
		c.fail()
	}
	value, lines := describe(op, g)
	if g.Status != wire.StatusOK {
		lines = []string{c.failureText(g)}
	}
	if label != "" && g.Status == wire.StatusOK {
		lines[0] = label + " = " + lines[0]
	}
	if c.opts.JSON {
		obj := groupObject(op, value, g)
		if label != "" {
			obj["of"] = label
		}
		c.emit(obj)
		return
	}
	c.println(c.block(g.Ranks, g.Status != wire.StatusOK, lines))
}

// report prints what happened to a command on ranks that did not do it,
// without an answer of theirs: a run refused, a breakpoint that a restart
// could not plant again. status is "refused" or "error".
func (c *Console) report(op string, ranks wire.RankSet, status, text string) {
	c.fail()
	if c.opts.JSON {
		c.emit(map[string]any{"ranks": ranks.String(), "count": ranks.Count(), "op": op, "status": status, "error": text})
		return
	}
	c.println(c.block(ranks, true, []string{text}))
}

// Output prints a line that the job's starter wrote (mpirun passes on its
// ranks' output so, for a job acquired through MPIR).
func (c *Console) Output(text string) {
	if c.opts.JSON {
		c.write(appendJSON(nil, c.stamp("event", map[string]any{"ranks": "", "count": 0, "event": "starter-output", "value": text})))
		return
	}
	c.println(text)
}

// PrintAnswers prints the merged answers to a command that was sent
// without the console (such as attach, by the launcher). Under --json
// they are a reply of their own, whatever command runs meanwhile.
func (c *Console) PrintAnswers(op string, groups []wire.Group) {
	if !c.opts.JSON {
		for _, g := range groups {
			c.printReply(op, "", g)
		}
		return
	}
	r := &reply{name: op, sentOp: op}
	for _, g := range groups {
		r.ranks = r.ranks.Union(g.Ranks)
		value, _ := describe(op, g)
		r.groups = append(r.groups, groupObject(op, value, g))
		r.failed = r.failed || g.Status != wire.StatusOK
	}
	c.mu.Lock()
	c.seq++
	r.seq = c.seq
	if r.failed {
		c.failed = true
	}
	if resumes[op] {
		c.setCause(r.ranks, r.seq)
	}
	c.mu.Unlock()
	c.end(r, nil)
}

// Failed reports whether some rank answered some command with an error,
// a timeout or a loss, or still ran when a wait or a step ran out of
// time: what the exit status of a script tells.
func (c *Console) Failed() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.failed
}

// appendEvent appends one piece of news from the tree, as it prints; a
// loss already told appends nothing.
func (c *Console) appendEvent(text []byte, ev client.Event) []byte {
	switch ev.Op {
	case wire.EventLost:
		if !c.lossNews(&ev) {
			return text
		}
	case wire.EventRejoined:
		c.rejoined(ev.Group.Ranks)
	case wire.EventExited:
		c.recordExit(ev)
	}
	value, lines := describe(ev.Op, ev.Group)
	if c.opts.JSON {
		obj := c.stamp("event", map[string]any{"ranks": ev.Group.Ranks.String(), "count": ev.Group.Ranks.Count(), "event": ev.Op})
		if value != nil {
			obj["value"] = value
		}
		if seq, ok := c.causeOf(ev.Group.Ranks); ok && caused[ev.Op] {
			obj["command"] = seq
		}
		return appendJSON(text, obj)
	}
	bad := ev.Group.Status != wire.StatusOK || ev.Op == wire.EventLost || ev.Op == wire.EventError
	return append(append(text, c.block(ev.Group.Ranks, bad, lines)...), '\n')
}

// ANSI colours, used only when Options.Color says the output is a terminal.
const (
	cyan  = "\033[36m"
	red   = "\033[31m"
	reset = "\033[0m"
)

// block puts the rank set before the first line and lines the others up
// under it; in colour, the rank set is cyan and a failure red.
func (c *Console) block(ranks wire.RankSet, bad bool, lines []string) string {
	prefix := "[" + ranks.String() + "] "
	indent := strings.Repeat(" ", len(prefix))
	for i := range lines {
		if c.opts.Color && bad {
			lines[i] = red + lines[i] + reset
		}
		if i == 0 {
			if c.opts.Color {
				lines[i] = cyan + prefix + reset + lines[i]
			} else {
				lines[i] = prefix + lines[i]
			}
		} else {
			lines[i] = indent + lines[i]
		}
	}
	return strings.Join(lines, "\n")
}

// describe turns a group's body into a value for JSON and lines of text.
func describe(op string, g wire.Group) (any, []string) {
	if g.Status != wire.StatusOK {
		return nil, []string{g.Status.String() + ": " + string(g.Body)}
	}
	v, lines, err := decode(op, g.Body)
	if err != nil {
		return nil, []string{"undecodable answer: " + err.Error()}
	}
	if len(lines) == 0 {
		lines = []string{"ok"}
	}
	return v, lines
}

func frameText(f wire.Frame) string {
	switch {
	case f.File != "" && f.Line == 0: // a place (wire.Frame.Place)
		return f.Func + " at " + f.File
	case f.File != "":
		return fmt.Sprintf("%s at %s:%d", f.Func, f.File, f.Line)
	case f.From != "":
		return f.Func + " from " + f.From
	}
	return f.Func
}

func stackText(frames []wire.Frame) string {
	parts := make([]string, len(frames))
	for i, f := range frames {
		parts[i] = frameText(f)
	}
	if len(parts) == 0 {
		return "no stack"
	}
	return strings.Join(parts, " < ")
}

// stateLines is a state's text, then what the stop tells of values, in
// gdb's words: a finish's returned value, a watchpoint's old and new
// values.
func stateLines(st wire.State) []string {
	lines := []string{stateText(st)}
	if st.Value != "" {
		lines = append(lines, "Value returned is "+st.Value)
	}
	if st.Old != "" {
		lines = append(lines, "Old value = "+st.Old)
	}
	if st.New != "" {
		word := "New value = "
		if st.Old == "" {
			word = "Value = "
		}
		lines = append(lines, word+st.New)
	}
	return lines
}

func stateText(st wire.State) string {
	switch st.State {
	case wire.StateStopped:
		text := "stopped in " + frameText(st.Frame)
		switch {
		case st.Signal != "":
			text += " (" + st.Signal + ")"
		case st.Breakpoint > 0 && strings.Contains(st.Reason, "watchpoint"):
			text += fmt.Sprintf(" (watchpoint %d)", st.Breakpoint)
		case st.Breakpoint > 0:
			text += fmt.Sprintf(" (breakpoint %d)", st.Breakpoint)
		case st.Reason != "":
			text += " (" + st.Reason + ")"
		}
		return text
	case wire.StateExited:
		switch {
		case st.Signal != "":
			return "killed by " + st.Signal
		case st.Reason != "" && st.Reason != "exited":
			return fmt.Sprintf("exited (%s)", st.Reason)
		}
		return fmt.Sprintf("exited with code %d", st.Code)
	case wire.StateNotStarted:
		if st.Reason != "" {
			return "not started (" + st.Reason + ")"
		}
	case wire.StateRunning:
		switch st.Reason {
		case wire.ReasonLoad:
			return "running (held at a library load until the front end plants its breakpoints)"
		case wire.OpStep, wire.OpNext, wire.OpFinish:
			return "running " + st.Reason + " from " + frameText(st.Frame)
		}
	}
	return st.State
}

func breakpointText(bp wire.Breakpoint) string {
	kind := bp.Type
	if bp.Temporary {
		kind = "temporary " + kind
	}
	text := fmt.Sprintf("%s %d", kind, bp.Number)
	switch {
	case bp.Pending:
		text += " pending on " + bp.Location
	case bp.Func != "":
		text += fmt.Sprintf(" at %s in %s", bp.Location, bp.Func)
	default:
		text += " on " + bp.Location
	}
	if len(bp.Trace) > 0 {
		text += ", logs " + strings.Join(bp.Trace, ", ")
	}
	if bp.Condition != "" {
		text += " if " + bp.Condition
	}
	if bp.Ignore > 0 {
		text += fmt.Sprintf(", ignore next %d hits", bp.Ignore)
	}
	if !bp.Enabled {
		text += ", disabled"
	}
	return text
}

func threadText(th wire.Thread) string {
	mark := " "
	if th.Current {
		mark = "*"
	}
	text := fmt.Sprintf("%s %d", mark, th.ID)
	for _, s := range []string{th.Name, th.State} {
		if s != "" {
			text += " " + s
		}
	}
	return text + " in " + frameText(th.Frame)
}

func frames(fs []wire.Frame) []map[string]any {
	out := make([]map[string]any, len(fs))
	for i, f := range fs {
		obj := map[string]any{"func": f.Func, "file": f.File, "line": f.Line}
		if f.From != "" {
			obj["from"] = f.From
		}
		out[i] = obj
	}
	return out
}

func state(st wire.State) map[string]any {
	obj := map[string]any{"state": st.State}
	if st.Reason != "" {
		obj["reason"] = st.Reason
	}
	// A stop's frame, or the frame a running step began in.
	if st.State == wire.StateStopped || st.State == wire.StateRunning && st.Frame.Func != "" {
		obj["frame"] = frames([]wire.Frame{st.Frame})[0]
	}
	if st.Signal != "" {
		obj["signal"] = st.Signal
	}
	if st.Breakpoint > 0 {
		obj["breakpoint"] = st.Breakpoint
	}
	if st.State == wire.StateExited {
		obj["code"] = st.Code
	}
	if st.Value != "" {
		obj["value"] = st.Value
	}
	if st.Old != "" {
		obj["old"] = st.Old
	}
	if st.New != "" {
		obj["new"] = st.New
	}
	return obj
}
