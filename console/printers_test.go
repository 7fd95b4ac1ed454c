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
	for _, ev := range []string{wire.EventLost, wire.EventRejoined, wire.EventError, wire.EventWarning,
		wire.EventRunning, wire.EventStopped, wire.EventExited, wire.EventLoaded, wire.EventOutput} {
		if printers[ev] == nil {
			t.Errorf("event %s: no printer", ev)
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
