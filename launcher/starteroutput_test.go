package launcher

import (
	"reflect"
	"strings"
	"testing"

	"github.com/sdm-hpc/sdm/wire"
)

// outputTree takes output for ranks 0..size-1 until it is closed.
type outputTree struct {
	size   int
	closed bool
	got    []string
}

func (o *outputTree) Size() int { return o.size }
func (o *outputTree) AddOutput(ranks wire.RankSet, out wire.Output) bool {
	if o.closed {
		return false
	}
	o.got = append(o.got, ranks.String()+":"+out.Text)
	return true
}

func TestStarterOutputWaitsForTheSessionThenSortsLines(t *testing.T) {
	var w StarterOutput
	var printed []string
	print := func(s string) { printed = append(printed, s) }
	w.Line(StarterLine{Rank: -1, Text: "starter says hi\x00"})
	w.Line(StarterLine{Rank: 1, Text: "early"})
	tree := &outputTree{size: 2}
	w.To(print, tree)
	w.Line(StarterLine{Rank: 5, Text: "beyond the \x1b[1mjob\x1b[0m\x07"})
	tree.closed = true
	w.Line(StarterLine{Rank: 0, Text: "late"})
	if want := []string{"1:early\n"}; !reflect.DeepEqual(tree.got, want) {
		t.Errorf("the tree got %q, want %q", tree.got, want)
	}
	// The starter's words without control bytes, a rank's with its
	// escape sequences.
	if want := []string{"starter says hi", "[5] beyond the \x1b[1mjob\x1b[0m", "[0] late"}; !reflect.DeepEqual(printed, want) {
		t.Errorf("printed %q, want %q", printed, want)
	}
}

func TestProgressLineOnlyOnATerminal(t *testing.T) {
	var out strings.Builder
	p := NewProgressLine(&out, false)
	p.Show(Progress{Stage: StageConnected, Done: 1, Total: 2})
	p.Clear()
	if out.Len() != 0 {
		t.Errorf("off a terminal it wrote %q", out.String())
	}
	p = NewProgressLine(&out, true)
	p.Show(Progress{Stage: StageStarting})
	p.Clear()
	if out.Len() != 0 {
		t.Errorf("a step without counts wrote %q", out.String())
	}
	p.Show(Progress{Stage: StageConnected, Done: 3, Total: 4})
	p.Clear()
	if want := "\r\033[Kconnected 3/4\r\033[K"; out.String() != want {
		t.Errorf("wrote %q, want %q", out.String(), want)
	}
}
