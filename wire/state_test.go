package wire

import (
	"bytes"
	"math"
	"testing"

	"github.com/vmihailenco/msgpack/v5"
)

// reflectedState is State without its encoder: what reflection makes of
// it.
type reflectedState struct {
	State      string
	Reason     string
	Frame      Frame
	Signal     string
	Breakpoint int
	Code       int
	Value      string `msgpack:",omitempty"`
	Old        string `msgpack:",omitempty"`
	New        string `msgpack:",omitempty"`
}

// A state encodes to the bytes reflection gives, with or without each of
// its optional fields, so that states merge with those of servers that
// encode by reflection, and decodes back.
func TestStateEncoding(t *testing.T) {
	where := Frame{Func: "main", File: "ring.c", Line: 42}
	for _, s := range []State{
		{},
		{State: "stopped", Reason: "breakpoint-hit", Frame: where, Breakpoint: 1},
		{State: "exited", Reason: "exited", Code: -1, Signal: "SIGSEGV"},
		{State: "stopped", Reason: "function-finished", Frame: where, Value: "3"},
		{State: "stopped", Reason: "watchpoint-trigger", Old: "1", New: "2", Breakpoint: math.MaxInt64},
		{State: "stopped", Reason: "read-watchpoint-trigger", New: "2", Code: math.MinInt64},
	} {
		got, err := msgpack.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		want, err := msgpack.Marshal(reflectedState(s))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%+v encodes to %x, reflection to %x", s, got, want)
		}
		var back State
		if err := msgpack.Unmarshal(got, &back); err != nil || back != s {
			t.Errorf("%+v came back as %+v, %v", s, back, err)
		}
	}
}
