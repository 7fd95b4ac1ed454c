package console

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/sdm-hpc/sdm/wire"
)

// jsonLines parses what a console printed under --json: one object a
// line, each of the schema's version and of a known type.
func jsonLines(t *testing.T, out string) []map[string]any {
	t.Helper()
	var objs []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if line == "" {
			continue
		}
		var obj map[string]any
		if err := json.Unmarshal([]byte(line), &obj); err != nil {
			t.Fatalf("not one JSON object a line: %q: %v", line, err)
		}
		if obj["version"] != float64(JSONVersion) {
			t.Errorf("no version %d: %s", JSONVersion, line)
		}
		switch obj["type"] {
		case "reply", "event", "note", "message":
		default:
			t.Errorf("no known type: %s", line)
		}
		objs = append(objs, obj)
	}
	return objs
}

// replies picks the replies out of objs.
func replies(objs []map[string]any) []map[string]any {
	var out []map[string]any
	for _, o := range objs {
		if o["type"] == "reply" {
			out = append(out, o)
		}
	}
	return out
}

// lastGroup is the last group of a reply.
func lastGroup(r map[string]any) map[string]any {
	groups, _ := r["groups"].([]any)
	if len(groups) == 0 {
		return nil
	}
	g, _ := groups[len(groups)-1].(map[string]any)
	return g
}

// TestEveryCommandRepliesOnce enumerates the console's commands and
// their aliases: under --json each line, typed right or wrong, gets
// exactly one reply, numbered in order, that names the command and its
// rank set, and nothing else is printed but events.
func TestEveryCommandRepliesOnce(t *testing.T) {
	f := newFakeTree(4, atBreakpoint)
	c, out := fakeConsole(t, f, Options{JSON: true, Timeout: 50 * time.Millisecond})
	var lines []string
	for _, cmd := range commands {
		for _, name := range append([]string{cmd.name}, cmd.aliases...) {
			lines = append(lines, "[1-2] "+name, "[1-2] "+name+" 1")
		}
	}
	for _, l := range lines {
		if err := c.Exec(context.Background(), l); err != nil && !errors.Is(err, ErrUsage) && !errors.Is(err, ErrQuit) {
			t.Errorf("%q: %v", l, err)
		}
	}
	c.Sync(context.Background())
	objs := jsonLines(t, out.String())
	got := replies(objs)
	if len(got) != len(lines) {
		t.Fatalf("%d lines gave %d replies", len(lines), len(got))
	}
	for i, r := range got {
		command, _ := r["command"].(map[string]any)
		name, _ := typed(lines[i][len("[1-2] "):])
		if cmd, err := lookup(name); err == nil {
			name = cmd.name
		}
		if r["seq"] != float64(i+1) || command["line"] != lines[i] || command["name"] != name || r["ranks"] != "1-2" {
			t.Errorf("%q: reply %v", lines[i], r)
		}
		if _, ok := r["ok"].(bool); !ok {
			t.Errorf("%q: reply without ok: %v", lines[i], r)
		}
		if _, ok := r["groups"].([]any); !ok {
			t.Errorf("%q: reply without groups: %v", lines[i], r)
		}
		if r["ok"] == false && r["error"] == nil && len(r["groups"].([]any)) == 0 {
			t.Errorf("%q: failed without saying why: %v", lines[i], r)
		}
	}
	for _, o := range objs {
		if o["type"] != "reply" && o["type"] != "event" {
			t.Errorf("a line outside any reply: %v", o)
		}
	}
}

// A command's reply holds the command as typed and as sent, and its
// answers by rank group; the events it caused name it.
func TestReplyNamesItsCommandAndItsEventsNameIt(t *testing.T) {
	f := newFakeTree(4, runningState)
	c, out := fakeConsole(t, f, Options{JSON: true})
	ctx := context.Background()
	for _, l := range []string{"break ring.c:10 if i > 2", "[1,3] halt", "[1,3] wait", "[0-3] p buf[i]"} {
		if err := c.Exec(ctx, l); err != nil {
			t.Fatalf("%q: %v", l, err)
		}
	}
	c.Sync(ctx)
	objs := jsonLines(t, out.String())
	got := replies(objs)
	if len(got) != 4 {
		t.Fatalf("want 4 replies: %s", out)
	}
	brk, _ := got[0]["command"].(map[string]any)
	body, _ := brk["body"].(map[string]any)
	if brk["name"] != "break" || brk["op"] != "break" || body["location"] != "ring.c:10" || body["condition"] != "i > 2" {
		t.Errorf("break's command: %v", brk)
	}
	p, _ := got[3]["command"].(map[string]any)
	if p["name"] != "print" || p["args"] != "buf[i]" || p["line"] != "[0-3] p buf[i]" {
		t.Errorf("print's command: %v", p)
	}
	if g := lastGroup(got[3]); g["value"] != "42" || g["of"] != "buf[i]" || g["ranks"] != "0-3" || got[3]["ok"] != true {
		t.Errorf("print's reply: %v", got[3])
	}
	var stop map[string]any
	for _, o := range objs {
		if o["event"] == "stopped" {
			stop = o
		}
	}
	if stop == nil || stop["ranks"] != "1,3" || stop["command"] != got[1]["seq"] {
		t.Errorf("the halt's stop does not name the halt (seq %v): %v", got[1]["seq"], stop)
	}
}

// Unknown commands and commands typed wrong are replies that failed, on
// the console's output, saying why, with the line as typed.
func TestMistakesAreReplies(t *testing.T) {
	f := newFakeTree(4, atBreakpoint)
	var out strings.Builder
	c := New(f, &out, Options{JSON: true})
	for _, l := range []string{"frobnicate x", "[0-", "print", "[9] where"} {
		if err := c.Exec(context.Background(), l); !errors.Is(err, ErrUsage) {
			t.Errorf("%q: error %v, want a usage error", l, err)
		}
	}
	got := replies(jsonLines(t, out.String()))
	want := []struct{ name, line, says string }{
		{"frobnicate", "frobnicate x", `unknown command "frobnicate"`},
		{"", "[0-", "no closing ]"},
		{"print", "print", "needs an expression"},
		{"where", "[9] where", "not in this job"},
	}
	if len(got) != len(want) {
		t.Fatalf("want %d replies: %s", len(want), out.String())
	}
	for i, w := range want {
		command, _ := got[i]["command"].(map[string]any)
		e, _ := got[i]["error"].(string)
		if got[i]["ok"] != false || got[i]["usage"] != true || command["name"] != w.name || command["line"] != w.line || !strings.Contains(e, w.says) {
			t.Errorf("%q: reply %v", w.line, got[i])
		}
	}
	if len(f.sent()) != 0 {
		t.Errorf("mistakes sent %v", f.sent())
	}
}

// A script's mistakes say where they are in the reply, not on the error
// stream, under --json.
func TestScriptMistakesUnderJSON(t *testing.T) {
	f := newFakeTree(2, atBreakpoint)
	var out strings.Builder
	c := New(f, &out, Options{JSON: true})
	var complained []error
	err := c.RunScript(context.Background(), strings.NewReader("where\nfrobnicate\n"), "cmds.txt", func(err error) { complained = append(complained, err) })
	if !errors.Is(err, ErrScriptErrors) {
		t.Fatalf("error %v, want ErrScriptErrors", err)
	}
	if len(complained) != 0 {
		t.Errorf("complained %v: the reply says it", complained)
	}
	got := replies(jsonLines(t, out.String()))
	if len(got) != 2 {
		t.Fatalf("want 2 replies: %s", out.String())
	}
	if command, _ := got[1]["command"].(map[string]any); command["at"] != "cmds.txt:2" || got[1]["ok"] != false {
		t.Errorf("reply %v", got[1])
	}
}

// Answers sent without the console (attach, by the launcher) are a reply
// of their own, even while a command runs.
func TestAnswersOfTheLauncherAreAReply(t *testing.T) {
	f := newFakeTree(2, atBreakpoint)
	f.answer = blocks
	c, out := fakeConsole(t, f, Options{JSON: true})
	ctx, cancel := context.WithCancel(context.Background())
	errc := execAsync(ctx, c, "where")
	asked(t, f)
	c.PrintAnswers(wire.OpAttach, []wire.Group{{Ranks: wire.Range(0, 1), Body: wire.MustEncode(wire.Attached{State: atBreakpoint})}})
	cancel()
	result(t, errc)
	got := replies(jsonLines(t, out.String()))
	if len(got) != 2 {
		t.Fatalf("want 2 replies: %s", out.String())
	}
	attach, where := got[0], got[1]
	if command, _ := attach["command"].(map[string]any); command["name"] != "attach" || attach["ok"] != true || lastGroup(attach)["op"] != "attach" {
		t.Errorf("attach: %v", attach)
	}
	if command, _ := where["command"].(map[string]any); command["name"] != "where" || len(where["groups"].([]any)) != 1 || lastGroup(where)["note"] != "interrupted" {
		t.Errorf("where took the attach's answers: %v", where)
	}
}
