package wire

import (
	"bytes"
	"math"
	"testing"

	"github.com/vmihailenco/msgpack/v5"
)

// reflected is Frame without its encoder: what reflection makes of it.
type reflected struct {
	_msgpack struct{} `msgpack:",as_array"`
	Func     string
	File     string
	Line     int
	From     string
}

// A stack encodes to the bytes reflection gives, whatever its frames.
func TestStackEncoding(t *testing.T) {
	frames := []reflected{{Func: "MPI_Recv", From: "libmpi.so"}, {Func: "main", File: "ring.c", Line: 42}}
	for _, rs := range [][]reflected{nil, {}, frames[:1], frames} {
		var s Stack
		if rs != nil {
			s.Frames = []Frame{}
		}
		for _, r := range rs {
			s.Frames = append(s.Frames, Frame{Func: r.Func, File: r.File, Line: r.Line, From: r.From})
		}
		got, err := msgpack.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		want, err := msgpack.Marshal(struct{ Frames []reflected }{rs})
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%+v encodes to %x, reflection to %x", s, got, want)
		}
		var back Stack
		if err := msgpack.Unmarshal(got, &back); err != nil || len(back.Frames) != len(rs) {
			t.Errorf("%+v came back as %+v, %v", s, back, err)
		}
	}
}

// A frame encodes to the bytes reflection gives, so that stacks merge
// with those of servers that encode by reflection, and decodes back.
func TestFrameEncoding(t *testing.T) {
	for _, f := range []Frame{
		{},
		{Func: "main", File: "ring.c", Line: 42},
		{Func: "MPI_Recv", From: "/usr/lib/libmpi.so.40", Line: -1},
		{Func: string(make([]byte, 300)), Line: math.MaxInt64},
		{Line: 1 << 20},
	} {
		got, err := msgpack.Marshal(Stack{Frames: []Frame{f}})
		if err != nil {
			t.Fatal(err)
		}
		want, err := msgpack.Marshal(struct{ Frames []reflected }{[]reflected{{Func: f.Func, File: f.File, Line: f.Line, From: f.From}}})
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%+v encodes to %x, reflection to %x", f, got, want)
		}
		var back Stack
		if err := msgpack.Unmarshal(got, &back); err != nil || len(back.Frames) != 1 || back.Frames[0] != f {
			t.Errorf("%+v came back as %+v, %v", f, back, err)
		}
	}
}
