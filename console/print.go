package console

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/sdm-hpc/sdm/client"
	"github.com/sdm-hpc/sdm/wire"
)

// println writes one line (or block) of text; in JSON mode it is wrapped as
// {"message": ...} so that every line stays one JSON object.
func (c *Console) println(text string) {
	if c.opts.JSON {
		c.emit(map[string]any{"message": text})
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	fmt.Fprintln(c.out, text)
}

// emit writes one JSON object on its own line.
func (c *Console) emit(obj map[string]any) {
	b, err := json.Marshal(obj)
	if err != nil {
		b, _ = json.Marshal(map[string]any{"error": err.Error()})
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	fmt.Fprintf(c.out, "%s\n", b)
}

// note reports a change of console state, such as the focus.
func (c *Console) note(what string, ranks wire.RankSet) {
	if c.opts.JSON {
		c.emit(map[string]any{what: ranks.String(), "ranks": ranks.String(), "count": ranks.Count()})
		return
	}
	c.println(fmt.Sprintf("%s [%v]", what, ranks))
}

// printReply prints one group of answers to op.
func (c *Console) printReply(op string, g wire.Group) {
	value, text := decodeBody(op, g)
	if c.opts.JSON {
		obj := map[string]any{"ranks": g.Ranks.String(), "count": g.Ranks.Count(), "reply": op, "status": g.Status.String()}
		if g.Status == wire.StatusOK {
			obj["value"] = value
		} else {
			obj["error"] = string(g.Body)
		}
		c.emit(obj)
		return
	}
	c.println(fmt.Sprintf("[%v] %s", g.Ranks, text))
}

// printEvent prints one piece of news from the tree.
func (c *Console) printEvent(ev client.Event) {
	value, text := decodeBody(ev.Op, ev.Group)
	if c.opts.JSON {
		obj := map[string]any{"ranks": ev.Group.Ranks.String(), "count": ev.Group.Ranks.Count(), "event": ev.Op}
		if value != nil {
			obj["value"] = value
		}
		c.emit(obj)
		return
	}
	c.println(fmt.Sprintf("[%v] %s", ev.Group.Ranks, text))
}

// decodeBody turns a group's body into a value for JSON and a line of text.
func decodeBody(op string, g wire.Group) (any, string) {
	if g.Status != wire.StatusOK {
		return nil, g.Status.String() + ": " + string(g.Body)
	}
	switch op {
	case wire.EventLost:
		return string(g.Body), "lost: " + string(g.Body)
	case wire.EventRunning:
		return nil, "running"
	case wire.OpWhere:
		var st wire.Stack
		if err := wire.Decode(g.Body, &st); err != nil {
			return nil, err.Error()
		}
		return frames(st.Frames), stackText(st.Frames)
	case wire.OpStatus, wire.OpStart, wire.OpRun, wire.OpHalt, wire.OpKill, wire.EventStopped, wire.EventExited:
		var st wire.State
		if err := wire.Decode(g.Body, &st); err != nil {
			return nil, err.Error()
		}
		return state(st), stateText(st)
	case wire.EventOutput:
		var o wire.Output
		if err := wire.Decode(g.Body, &o); err != nil {
			return nil, err.Error()
		}
		return map[string]string{"stream": o.Stream, "text": o.Text}, strings.TrimSuffix(o.Text, "\n")
	}
	if len(g.Body) == 0 {
		return nil, "ok"
	}
	var v any
	if err := wire.Decode(g.Body, &v); err != nil {
		return nil, err.Error()
	}
	return v, fmt.Sprint(v)
}

func frameText(f wire.Frame) string {
	if f.File == "" {
		return f.Func
	}
	return fmt.Sprintf("%s at %s:%d", f.Func, f.File, f.Line)
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

func stateText(st wire.State) string {
	switch st.State {
	case wire.StateStopped:
		text := "stopped in " + frameText(st.Frame)
		if st.Reason != "" {
			text += " (" + st.Reason + ")"
		}
		return text
	case wire.StateExited:
		if st.Reason != "" {
			return fmt.Sprintf("exited with code %d (%s)", st.Code, st.Reason)
		}
		return fmt.Sprintf("exited with code %d", st.Code)
	}
	return st.State
}

func frames(fs []wire.Frame) []map[string]any {
	out := make([]map[string]any, len(fs))
	for i, f := range fs {
		out[i] = map[string]any{"func": f.Func, "file": f.File, "line": f.Line}
	}
	return out
}

func state(st wire.State) map[string]any {
	obj := map[string]any{"state": st.State}
	if st.Reason != "" {
		obj["reason"] = st.Reason
	}
	if st.State == wire.StateStopped {
		obj["frame"] = frames([]wire.Frame{st.Frame})[0]
	}
	if st.State == wire.StateExited {
		obj["code"] = st.Code
	}
	return obj
}
