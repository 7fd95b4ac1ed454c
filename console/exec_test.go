package console

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/sdm-hpc/sdm/wire"
)

func TestCommandsGoToTheirRankSets(t *testing.T) {
	f := newFakeTree(8, atBreakpoint)
	_, err := execLines(t, f, Options{Timeout: 7 * time.Second},
		"print x",         // the focus: every rank at first
		"[2-4,6] print y", // a set of its own
		"focus 1-3",
		"print z", // the new focus
		"defset tail 6-7",
		"[tail] print w", // a named set
		"focus tail",
		"p v")
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		ranks wire.RankSet
		expr  string
	}{
		{wire.All(8), "x"},
		{wire.Range(2, 4).Union(wire.Single(6)), "y"},
		{wire.Range(1, 3), "z"},
		{wire.Range(6, 7), "w"},
		{wire.Range(6, 7), "v"},
	}
	got := f.sent()
	if len(got) != len(want) {
		t.Fatalf("sent %d commands, want %d: %v", len(got), len(want), got)
	}
	for i, w := range want {
		var e wire.Expr
		if err := wire.Decode(got[i].body, &e); err != nil || got[i].op != wire.OpPrint || !got[i].ranks.Equal(w.ranks) || e.Expr != w.expr {
			t.Errorf("command %d: %s %v %q (%v), want print %v %q", i, got[i].op, got[i].ranks, e.Expr, err, w.ranks, w.expr)
		}
		if got[i].timeout != 7*time.Second {
			t.Errorf("command %d waits %v, want the console's 7s", i, got[i].timeout)
		}
	}
}

func TestMistakesSendNothing(t *testing.T) {
	for line, want := range map[string]string{
		"frobnicate":     `unknown command "frobnicate"`,
		"[0-":            "no closing ]",
		"[9] print x":    "9",
		"[1-2]":          "needs a command after it",
		"[nosuch] where": "nosuch",
	} {
		f := newFakeTree(4, atBreakpoint)
		_, err := execLines(t, f, Options{}, line)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: error %v, want one saying %q", line, err, want)
		}
		if len(f.sent()) != 0 {
			t.Errorf("%q: sent %v", line, f.sent())
		}
	}
}

// The console prints one line per group the tree merged, in the tree's
// order, with the group's rank set, and a failure, a timeout or a loss as
// such; any of them makes the session count as failed.
func TestAnswersPrintAsMerged(t *testing.T) {
	text := func(s string) []byte { return wire.MustEncode(wire.Text{Text: s}) }
	f := newFakeTree(8, atBreakpoint)
	f.answer = func(context.Context, wire.RankSet, string) ([]wire.Group, error) {
		return []wire.Group{
			{Ranks: wire.Range(0, 2).Union(wire.Single(5)), Body: text("42")},
			{Ranks: wire.Range(3, 4), Body: text("first\nsecond")},
			{Ranks: wire.Single(6), Status: wire.StatusError, Body: []byte(`No symbol "x" in current context.`)},
			{Ranks: wire.Single(7), Status: wire.StatusTimeout, Body: []byte("server 7 not responding")},
		}, nil
	}
	var out strings.Builder
	c := New(f, &out, Options{})
	if err := c.Exec(context.Background(), "print x"); err != nil {
		t.Fatal(err)
	}
	want := "[0-2,5] x = 42\n[3-4] x = first\n      second\n[6] error: No symbol \"x\" in current context.\n" +
		// Before the console's deadline: a node's verdict, without one.
		"[7] no answer (server 7 not responding)\n"
	if out.String() != want {
		t.Errorf("printed\n%s\nwant\n%s", out.String(), want)
	}
	if !c.Failed() {
		t.Error("an error and a timeout do not count as a failure")
	}
}

func TestAnswersInJSON(t *testing.T) {
	f := newFakeTree(4, atBreakpoint)
	f.answer = func(context.Context, wire.RankSet, string) ([]wire.Group, error) {
		return []wire.Group{
			{Ranks: wire.Range(0, 2), Body: wire.MustEncode(wire.Text{Text: "42"})},
			{Ranks: wire.Single(3), Status: wire.StatusLost, Body: []byte("server 3 not responding")},
		}, nil
	}
	out, err := execLines(t, f, Options{JSON: true}, "print x")
	if err != nil {
		t.Fatal(err)
	}
	replies := jsonLines(t, out)
	if len(replies) != 1 {
		t.Fatalf("printed %d objects, want one reply: %s", len(replies), out)
	}
	r := replies[0]
	groups, _ := r["groups"].([]any)
	if r["type"] != "reply" || r["ok"] != false || len(groups) != 2 {
		t.Fatalf("reply %s", out)
	}
	ok, lost := groups[0].(map[string]any), groups[1].(map[string]any)
	if ok["ranks"] != "0-2" || ok["value"] != "42" || ok["op"] != "print" || ok["of"] != "x" ||
		lost["ranks"] != "3" || lost["status"] != "lost" || lost["error"] != "server 3 not responding" {
		t.Errorf("groups %v", groups)
	}
}

// A command the tree could not carry (the master gone, no answer by the
// deadline) is the command's error, and nothing is printed for it.
func TestTreeFailureIsTheCommandsError(t *testing.T) {
	gone := errors.New("print: the master did not answer within 31s")
	f := newFakeTree(2, atBreakpoint)
	f.answer = func(context.Context, wire.RankSet, string) ([]wire.Group, error) { return nil, gone }
	out, err := execLines(t, f, Options{}, "print x")
	if !errors.Is(err, gone) {
		t.Errorf("error %v, want %v", err, gone)
	}
	if out != "" {
		t.Errorf("printed %q", out)
	}
}

// A command ends with its context, however long the tree takes, and says
// it was interrupted.
func TestCommandEndsWithItsContext(t *testing.T) {
	f := newFakeTree(2, atBreakpoint)
	f.answer = blocks
	c := New(f, &strings.Builder{}, Options{})
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- c.Exec(ctx, "print x") }()
	asked(t, f)
	cancel()
	select {
	case err := <-errc:
		if !errors.Is(err, ErrInterrupted) {
			t.Errorf("error %v, want ErrInterrupted", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the command did not end within 10s of its context")
	}
}
