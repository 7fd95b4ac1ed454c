package console

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/sdm-hpc/sdm/op"
	"github.com/sdm-hpc/sdm/wire"
)

// TestEveryOpHasAPrinter enumerates the op table: the console prints the
// answers to every op that reaches a rank, and each printer takes the
// answer type the table gives (a zero answer prints without error).
func TestEveryOpHasAPrinter(t *testing.T) {
	for _, s := range op.Table {
		p, ok := printers[s.Name]
		if s.Tree {
			continue
		}
		if !ok {
			t.Errorf("%s: no printer", s.Name)
			continue
		}
		if _, lines, err := p(nil); err != nil {
			t.Errorf("%s: an empty answer printed %q, %v", s.Name, lines, err)
		}
	}
}

// TestEveryEventHasAPrinter enumerates the table's events: the console
// prints every event but the three it takes as news of the tree and of the
// output's order, and each printer takes the body type the table gives.
func TestEveryEventHasAPrinter(t *testing.T) {
	notPrinted := map[string]bool{op.Connected.Name: true, op.OutputMark.Name: true, op.OutputEnd.Name: true}
	for _, e := range op.Events {
		p, ok := printers[e.Name]
		if ok == notPrinted[e.Name] {
			t.Errorf("event %s: has a printer %v, yet the console prints it %v", e.Name, ok, !notPrinted[e.Name])
			continue
		}
		if !ok {
			continue
		}
		if _, lines, err := p(nil); err != nil {
			t.Errorf("event %s: an empty body printed %q, %v", e.Name, lines, err)
		}
	}
	// The bodies the backends send print as before the table.
	for _, c := range []struct {
		name string
		body []byte
		want string
	}{
		{op.Lost.Name, []byte("server 3 hung up"), "lost: server 3 hung up"},
		{op.Warning.Name, op.Warning.Body("no CUDA"), "warning: no CUDA"},
		{op.Stopped.Name, op.Stopped.Body(wire.State{State: wire.StateStopped, Reason: "breakpoint-hit",
			Frame: wire.Frame{Func: "compute", File: "plain.c", Line: 15}}), "stopped in compute at plain.c:15"},
		{op.Output.Name, op.Output.Body(wire.Output{Stream: "tty", Text: "hello\n"}), "hello"},
		{op.Running.Name, nil, "running"},
	} {
		_, lines, err := printers[c.name](c.body)
		if err != nil || len(lines) != 1 || !strings.HasPrefix(lines[0], c.want) {
			t.Errorf("%s printed %q, %v; want %q", c.name, lines, err, c.want)
		}
	}
}

// answersPrint is a tree whose ranks 0-3 all answer print with 42, and
// which records the body it was sent.
type answersPrint struct {
	ranksOnly
	body []byte
}

func (a *answersPrint) Command(_ context.Context, ranks wire.RankSet, o string, body []byte, _ time.Duration) ([]wire.Group, error) {
	a.body = body
	return []wire.Group{{Ranks: ranks, Body: wire.MustEncode(wire.Text{Text: "42"})}}, nil
}

func TestPrintShowsTheExpression(t *testing.T) {
	var out strings.Builder
	tree := &answersPrint{ranksOnly: 4}
	c := New(tree, &out, Options{})
	if err := c.Exec(context.Background(), "print i + 1"); err != nil {
		t.Fatal(err)
	}
	if got := out.String(); got != "[0-3] i + 1 = 42\n" {
		t.Fatalf("print printed %q", got)
	}
	if e, err := op.Print.DecodeBody(tree.body); err != nil || e.Expr != "i + 1" {
		t.Fatalf("print sent %+v, %v", e, err)
	}
}

// A rank's output reaches the terminal without the control bytes a
// terminal acts on, its escape sequences kept; JSON has all of it.
func TestOutputControlBytes(t *testing.T) {
	raw := "\x1b[1mbold\x1b[0m\x00 and\r a bell\x07\n"
	v, lines, err := printers[op.Output.Name](wire.MustEncode(wire.Output{Stream: "stdout", Text: raw}))
	if err != nil || len(lines) != 1 || lines[0] != "\x1b[1mbold\x1b[0m and a bell" {
		t.Fatalf("text %q, %v", lines, err)
	}
	if v.(map[string]string)["text"] != raw {
		t.Errorf("JSON's text %q, want %q", v.(map[string]string)["text"], raw)
	}
}
