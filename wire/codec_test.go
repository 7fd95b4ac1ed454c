package wire

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"runtime"
	"testing"
	"time"
)

func TestCodecRoundTrip(t *testing.T) {
	var buf bytes.Buffer
	c := NewCodec(&buf, 0)
	in := []*Message{
		{Kind: KindHello, Body: MustEncode(Hello{Index: 3, Size: 8})},
		{Kind: KindCommand, ID: 7, Op: "where", Ranks: Range(0, 3).Union(Single(7)), Timeout: 2 * time.Second, Body: []byte{0xc0}},
		{Kind: KindReply, ID: 7, Groups: []Group{
			{Ranks: Range(0, 2), Body: []byte("a")},
			{Ranks: Single(7), Status: StatusTimeout, Body: []byte("no answer")},
		}},
	}
	for _, m := range in {
		if err := c.Write(m); err != nil {
			t.Fatal(err)
		}
	}
	for _, want := range in {
		got, err := c.Read()
		if err != nil {
			t.Fatal(err)
		}
		if got.Kind != want.Kind || got.ID != want.ID || got.Op != want.Op || !got.Ranks.Equal(want.Ranks) ||
			got.Timeout != want.Timeout || !bytes.Equal(got.Body, want.Body) || len(got.Groups) != len(want.Groups) {
			t.Fatalf("round trip: got %+v, want %+v", got, want)
		}
		for i := range got.Groups {
			g, w := got.Groups[i], want.Groups[i]
			if !g.Ranks.Equal(w.Ranks) || g.Status != w.Status || !bytes.Equal(g.Body, w.Body) {
				t.Fatalf("group %d: got %+v, want %+v", i, g, w)
			}
		}
	}
	var h Hello
	if err := Decode(in[0].Body, &h); err != nil || h.Index != 3 || h.Size != 8 {
		t.Fatalf("hello body: %+v %v", h, err)
	}
}

func TestCodecRefusesOversizedFrames(t *testing.T) {
	var buf bytes.Buffer
	c := NewCodec(&buf, 64)
	err := c.Write(&Message{Kind: KindCommand, Op: "x", Timeout: 1, Body: make([]byte, 100)})
	if !errors.Is(err, ErrFrameTooLarge) {
		t.Fatalf("write of big frame: %v", err)
	}
	binary.Write(&buf, binary.BigEndian, uint32(1<<30))
	if _, err := c.Read(); !errors.Is(err, ErrFrameTooLarge) {
		t.Fatalf("read of announced 1 GiB frame: %v", err)
	}
}

func TestDecodeRefusesBadMessages(t *testing.T) {
	for name, m := range map[string]*Message{
		"unknown kind":       {Kind: 99},
		"command without op": {Kind: KindCommand, Timeout: time.Second},
		"command no timeout": {Kind: KindCommand, Op: "where"},
		"empty group":        {Kind: KindReply, Groups: []Group{{Body: []byte("x")}}},
	} {
		b, err := Encode(m)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := DecodeMessage(b); !errors.Is(err, ErrMessage) {
			t.Errorf("%s: got %v, want ErrMessage", name, err)
		}
	}
	// A rank set whose ranges overlap is not canonical and must be refused.
	raw := []byte{0x98, 0x04, 0x00, 0x00, 0xa0, 0x90, 0x92, 0x00, 0x05} // truncated on purpose
	if _, err := DecodeMessage(raw); err == nil {
		t.Error("truncated message decoded")
	}
	nonCanonical, _ := Encode([]any{uint8(KindCommand), 1, "where", []uint32{5, 9, 3, 4}, int64(time.Second), nil, nil})
	if _, err := DecodeMessage(nonCanonical); !errors.Is(err, ErrMessage) {
		t.Errorf("non-canonical rank set: %v", err)
	}
}

// A length announced by a frame is checked against what the frame holds
// before anything is allocated for it: 11 bytes announcing a 4 GiB body,
// and a body announcing a 4 GiB binary, cost next to nothing.
func TestDecodeChecksLengthsBeforeAllocating(t *testing.T) {
	huge := map[string]func() error{
		"message body": func() error {
			_, err := DecodeMessage([]byte{0x97, 0x00, 0x00, 0xa0, 0x90, 0x00, 0xc6, 0xff, 0xff, 0xff, 0xf0})
			return err
		},
		"op string": func() error {
			_, err := DecodeMessage([]byte{0x97, 0x00, 0x00, 0xdb, 0xff, 0xff, 0xff, 0xf0})
			return err
		},
		"groups": func() error {
			_, err := DecodeMessage([]byte{0x97, 0x03, 0x00, 0xa0, 0x90, 0x00, 0xc0, 0xdd, 0xff, 0xff, 0xff, 0xff})
			return err
		},
		"body field": func() error {
			var v struct{ Data []byte }
			return Decode([]byte{0x81, 0xa4, 'D', 'a', 't', 'a', 0xc6, 0xff, 0xff, 0xff, 0xf0}, &v)
		},
	}
	for name, decode := range huge {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		err := decode()
		runtime.ReadMemStats(&after)
		if !errors.Is(err, ErrMessage) {
			t.Errorf("%s: %v, want ErrMessage", name, err)
		}
		if grew := after.TotalAlloc - before.TotalAlloc; grew > 1<<20 {
			t.Errorf("%s: decoding 12 bytes allocated %d bytes", name, grew)
		}
	}
}

func FuzzDecodeMessage(f *testing.F) {
	for _, m := range []*Message{
		{Kind: KindCommand, ID: 1, Op: "where", Ranks: All(8), Timeout: time.Second},
		{Kind: KindReply, ID: 1, Groups: []Group{{Ranks: Range(0, 6), Body: []byte("x")}, {Ranks: Single(7), Status: StatusLost}}},
		{Kind: KindHello, Body: MustEncode(Hello{Index: 1, Size: 8})},
	} {
		b, _ := Encode(m)
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := DecodeMessage(data)
		if err != nil {
			return
		}
		again, err := Encode(m)
		if err != nil {
			t.Fatalf("decoded message does not encode: %v", err)
		}
		m2, err := DecodeMessage(again)
		if err != nil {
			t.Fatalf("re-encoded message does not decode: %v", err)
		}
		if m2.Kind != m.Kind || !m2.Ranks.Equal(m.Ranks) || len(m2.Groups) != len(m.Groups) {
			t.Fatalf("round trip changed the message: %+v vs %+v", m, m2)
		}
	})
}

func BenchmarkCodecReply(b *testing.B) {
	var buf bytes.Buffer
	c := NewCodec(&buf, 0)
	stack := MustEncode(Stack{Frames: []Frame{{Func: "MPI_Recv", File: "recv.c", Line: 64}, {Func: "main", File: "hang.c", Line: 35}}})
	m := &Message{Kind: KindReply, ID: 42, Op: "where", Groups: []Group{{Ranks: Range(0, 1022), Body: stack}, {Ranks: Single(1023), Body: stack}}}
	for b.Loop() {
		if err := c.Write(m); err != nil {
			b.Fatal(err)
		}
		if _, err := c.Read(); err != nil {
			b.Fatal(err)
		}
	}
}

// FuzzDecodeBody feeds op bodies to Decode: no panic, and no allocation
// beyond what the body can hold (checkBounds runs first).
func FuzzDecodeBody(f *testing.F) {
	f.Add(MustEncode(Start{Program: "ring", Args: []string{"1"}, Env: []string{"A=B"}}))
	f.Add(MustEncode(Hello{Index: 1, Size: 8}))
	f.Add([]byte{0x81, 0xa4, 'A', 'r', 'g', 's', 0xdd, 0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, data []byte) {
		var s Start
		Decode(data, &s)
		var st Stack
		Decode(data, &st)
		var v any
		Decode(data, &v)
	})
}

// brokenPipe is a connection whose writes fail.
type brokenPipe struct{ bytes.Buffer }

func (*brokenPipe) Write([]byte) (int, error) { return 0, io.ErrClosedPipe }

func TestWriteFailureCutsTheStream(t *testing.T) {
	c := NewCodec(&brokenPipe{}, 64)
	err := c.Write(&Message{Kind: KindCommand, ID: 1, Op: OpWhere, Ranks: All(2)})
	if !errors.Is(err, ErrStreamCut) || !errors.Is(err, io.ErrClosedPipe) || err.Error() != io.ErrClosedPipe.Error() {
		t.Errorf("failed write: %v", err)
	}
	err = c.Write(&Message{Kind: KindCommand, ID: 2, Op: OpWhere, Ranks: All(2), Body: make([]byte, 100)})
	if !errors.Is(err, ErrFrameTooLarge) || errors.Is(err, ErrStreamCut) {
		t.Errorf("oversized message: %v", err)
	}
}
