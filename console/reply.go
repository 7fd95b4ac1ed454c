package console

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"time"
	"unicode"

	"github.com/sdm-hpc/sdm/op"
	"github.com/sdm-hpc/sdm/wire"
)

// Under --json every command gets exactly one reply object, printed when
// the command ends, that says what it answers: its number in the session,
// the command as typed, its rank set, whether it went well, and what the
// ranks answered, group by group (docs/JSON.md). The reply is gathered
// here, from the command table's entry and from what the command sent and
// printed, so that a command needs no code of its own to have one. Events
// are lines of their own; each names the command that set its ranks going,
// when one did.

// JSONVersion is the version of the JSON schema that every object printed
// under --json carries (docs/JSON.md).
const JSONVersion = 1

// reply is a command's answer under --json, gathered while it runs.
type reply struct {
	seq      int
	name     string // the command's name, or the word typed for an unknown one
	args     string // the arguments as typed
	line     string // the whole line as typed
	at       string // the script and line it came from ("-e:3"), if from one
	ranks    wire.RankSet
	sentOp   string // the first op the command sent, status aside
	sentBody []byte
	groups   []map[string]any
	messages []string
	failed   bool
}

// cause is the command that last set some ranks going (run, continue,
// step…): the events of those ranks came from it.
type cause struct {
	ranks wire.RankSet
	seq   int
}

// resumes are the ops whose events (a stop, an exit, output) are the
// command's doing.
var resumes = map[string]bool{
	wire.OpStart: true, wire.OpRun: true, wire.OpCont: true, wire.OpStep: true, wire.OpNext: true,
	wire.OpFinish: true, wire.OpHalt: true, wire.OpKill: true, wire.OpAttach: true, wire.OpDetach: true,
}

// caused tells whose doing an event is: the events of these kinds come
// from the command that set their ranks going.
var caused = map[string]bool{
	wire.EventRunning: true, wire.EventStopped: true, wire.EventExited: true,
	wire.EventOutput: true, wire.EventLoaded: true,
}

// begin opens the reply of a command line (nil without --json). cmd is
// nil for a line that did not parse.
func (c *Console) begin(line string, cmd *command, ranks wire.RankSet, args string) *reply {
	if !c.opts.JSON {
		return nil
	}
	r := &reply{line: strings.TrimSpace(line), ranks: ranks, args: args, at: c.at}
	if cmd != nil {
		r.name = cmd.name
	} else {
		r.name, r.args = typed(r.line)
	}
	c.mu.Lock()
	c.seq++
	r.seq = c.seq
	c.open = r
	c.mu.Unlock()
	return r
}

// typed splits a line that did not parse into the command's word and
// the rest, as typed.
func typed(line string) (name, args string) {
	if strings.HasPrefix(line, "[") {
		if end := strings.IndexByte(line, ']'); end >= 0 {
			line = line[end+1:]
		} else {
			line = ""
		}
	}
	name, args, _ = strings.Cut(strings.TrimSpace(line), " ")
	return name, strings.TrimSpace(args)
}

// end prints the reply r of a command that ended with err.
func (c *Console) end(r *reply, err error) {
	if r == nil {
		return
	}
	c.mu.Lock()
	if c.open == r {
		c.open = nil
	}
	c.mu.Unlock()
	if errors.Is(err, ErrQuit) {
		err = nil
	}
	command := map[string]any{"name": r.name, "args": r.args, "line": r.line}
	if r.at != "" {
		command["at"] = r.at
	}
	if r.sentOp != "" {
		command["op"] = r.sentOp
		if body := bodyValue(r.sentOp, r.sentBody); body != nil {
			command["body"] = body
		}
	}
	obj := c.stamp("reply", map[string]any{"seq": r.seq, "command": command, "ranks": r.ranks.String(),
		"count": r.ranks.Count(), "ok": err == nil && !r.failed, "groups": nonNil(r.groups)})
	if len(r.messages) > 0 {
		obj["messages"] = r.messages
	}
	if err != nil {
		obj["error"] = err.Error()
		obj["usage"] = errors.Is(err, ErrUsage)
	}
	c.write(appendJSON(nil, obj))
}

func nonNil(groups []map[string]any) []map[string]any {
	if groups == nil {
		return []map[string]any{}
	}
	return groups
}

// stamp makes obj a line of the JSON schema: its version and its type
// (reply, event, note or message).
func (c *Console) stamp(kind string, obj map[string]any) map[string]any {
	obj["version"], obj["type"] = JSONVersion, kind
	return obj
}

// add puts obj, one group of the answer or a note of the console's, in
// the reply of the command that runs; it reports false when none runs.
func (c *Console) add(obj map[string]any) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.open == nil {
		return false
	}
	c.open.groups = append(c.open.groups, obj)
	return true
}

// addMessage puts a message of the console's (help, sets) in the reply of
// the command that runs; it reports false when none runs.
func (c *Console) addMessage(text string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.open == nil {
		return false
	}
	c.open.messages = append(c.open.messages, text)
	return true
}

// fail counts a failure: the session's (Failed) and the reply's.
func (c *Console) fail() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.failed = true
	if c.open != nil {
		c.open.failed = true
	}
}

// groupObject is one group of answers to op as a reply holds it.
func groupObject(op string, value any, g wire.Group) map[string]any {
	obj := map[string]any{"ranks": g.Ranks.String(), "count": g.Ranks.Count(), "op": op, "status": g.Status.String()}
	if g.Status == wire.StatusOK {
		if value != nil {
			obj["value"] = value
		}
	} else {
		obj["error"] = string(g.Body)
	}
	return obj
}

// answered puts in the reply a group that the text leaves out (a continue
// that worked shows as the events it causes).
func (c *Console) answered(op string, g wire.Group) {
	if !c.opts.JSON {
		return
	}
	value, _ := describe(op, g)
	c.add(groupObject(op, value, g))
}

// sending notes, in the reply of the command that runs, the op it sends
// to ranks: the first besides status is what the command asked; an op
// that sets ranks going makes their events the command's.
func (c *Console) sending(ranks wire.RankSet, op string, body []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	r := c.open
	if r == nil {
		return
	}
	if r.sentOp == "" && op != wire.OpStatus {
		r.sentOp, r.sentBody = op, body
	}
	if resumes[op] {
		c.setCause(ranks, r.seq)
	}
}

// setCause makes seq the command whose doing the ranks' events are; c.mu
// is held.
func (c *Console) setCause(ranks wire.RankSet, seq int) {
	kept := c.causes[:0]
	for _, k := range c.causes {
		if k.ranks = k.ranks.Minus(ranks); !k.ranks.Empty() {
			kept = append(kept, k)
		}
	}
	c.causes = append(kept, cause{ranks, seq})
}

// causeOf is the command that set every rank of ranks going, if one did.
func (c *Console) causeOf(ranks wire.RankSet) (int, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, k := range c.causes {
		if k.ranks.Intersects(ranks) {
			return k.seq, ranks.Minus(k.ranks).Empty()
		}
	}
	return 0, false
}

// bodyValue is a body the console sent, decoded by the op table as JSON
// (lower-case keys: expr, location, ids); nil for none.
func bodyValue(name string, body []byte) any {
	s, ok := op.Lookup(name)
	if !ok || len(body) == 0 || s.Body == reflect.TypeFor[op.None]() {
		return nil
	}
	v := reflect.New(s.Body)
	if wire.Decode(body, v.Interface()) != nil {
		return nil
	}
	return jsonKeys(reflect.ValueOf(v.Elem().Interface()))
}

// jsonKeys turns a body's struct into a map whose keys are its fields'
// names in snake case (SetMatch: set_match), leaving out zero fields.
func jsonKeys(v reflect.Value) any {
	if v.Kind() != reflect.Struct {
		return v.Interface()
	}
	obj := map[string]any{}
	for i := range v.NumField() {
		f := v.Type().Field(i)
		if !f.IsExported() || v.Field(i).IsZero() {
			continue
		}
		obj[snake(f.Name)] = jsonKeys(v.Field(i))
	}
	return obj
}

func snake(name string) string {
	var b strings.Builder
	prev := rune(0)
	for _, r := range name {
		if unicode.IsUpper(r) && prev != 0 && !unicode.IsUpper(prev) {
			b.WriteByte('_')
		}
		b.WriteRune(unicode.ToLower(r))
		prev = r
	}
	return b.String()
}

// recording is the console's tree: each command it carries is noted in
// the reply of the console's command that sends it.
type recording struct {
	Tree
	c *Console
}

func (t recording) Command(ctx context.Context, ranks wire.RankSet, op string, body []byte, timeout time.Duration) ([]wire.Group, error) {
	t.c.sending(ranks, op, body)
	return t.Tree.Command(ctx, ranks, op, body, timeout)
}
