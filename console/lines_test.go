package console

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/sdm-hpc/sdm/client"
	"github.com/sdm-hpc/sdm/wire"
)

// ranksOnly is a tree of n ranks that answers nothing: enough for the
// commands that stay in the console, and for parsing.
type ranksOnly int

func (n ranksOnly) Size() int { return int(n) }
func (ranksOnly) NextEvent(ctx context.Context) (client.Event, error) {
	<-ctx.Done()
	return client.Event{}, ctx.Err()
}
func (ranksOnly) Done() <-chan struct{} { return nil }
func (ranksOnly) Command(context.Context, wire.RankSet, string, []byte, time.Duration) ([]wire.Group, error) {
	return nil, errors.New("no ranks to command")
}

func TestLines(t *testing.T) {
	long := strings.Repeat("x", 70000)
	full := strings.Repeat("y", MaxLine)
	in := "a\r\nb\n" + long + "\n\n" + full + "\r\n" + full + "z\nlast"
	want := []struct {
		text string
		n    int
	}{{"a", 1}, {"b", 1}, {long[:MaxLine+2], 70000}, {"", 0}, {full, MaxLine}, {(full + "z")[:MaxLine+1], MaxLine + 1}, {"last", 4}}
	l := newLines(strings.NewReader(in))
	for i, w := range want {
		if !l.scan() {
			t.Fatalf("line %d: none (%v)", i+1, l.err)
		}
		if string(l.text) != w.text || l.n != w.n {
			t.Fatalf("line %d: %d bytes kept of %d, want %d of %d", i+1, len(l.text), l.n, len(w.text), w.n)
		}
	}
	if l.scan() || l.err != nil {
		t.Fatalf("a line after the last: %q, %v", l.text, l.err)
	}
}

// A line longer than MaxLine is one command typed wrong: the script goes
// on with the next line.
func TestRunScriptLongLine(t *testing.T) {
	var out bytes.Buffer
	c := New(ranksOnly(4), &out, Options{})
	script := "help quit\n" + strings.Repeat("[0] print x", 7000) + "\nhelp quit\n"
	var complaints []string
	err := c.RunScript(context.Background(), strings.NewReader(script), "s", func(err error) {
		complaints = append(complaints, err.Error())
	})
	if !errors.Is(err, ErrScriptErrors) {
		t.Fatalf("RunScript: %v, want %v", err, ErrScriptErrors)
	}
	want := "s:2: a line of 77000 bytes is longer than the 64 KiB a command may be"
	if len(complaints) != 1 || complaints[0] != want {
		t.Fatalf("complaints %q, want %q", complaints, want)
	}
	if n := strings.Count(out.String(), "quit"); n < 2 {
		t.Fatalf("the commands around the long line did not both run: %q", out.String())
	}
}

// A line typed at the terminal goes to Exec whole: too long is a usage
// error there too.
func TestExecLongLine(t *testing.T) {
	c := New(ranksOnly(1), &bytes.Buffer{}, Options{})
	err := c.Exec(context.Background(), "help "+strings.Repeat(" ", MaxLine))
	want := fmt.Sprintf("a line of %d bytes is longer than the 64 KiB a command may be", MaxLine+5)
	if !errors.Is(err, ErrUsage) || err.Error() != want {
		t.Fatalf("Exec: %v, want %q", err, want)
	}
}
