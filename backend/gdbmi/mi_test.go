package gdbmi

import (
	"errors"
	"testing"
)

func TestParseRecords(t *testing.T) {
	r, err := Parse(`*stopped,reason="breakpoint-hit",disp="keep",bkptno="1",frame={addr="0x0000555555555160",func="compute",args=[{name="rank",value="5"}],file="plain.c",line="4"},thread-id="1",stopped-threads="all"`)
	if err != nil {
		t.Fatal(err)
	}
	f := r.Results.Get("frame")
	if r.Type != Exec || r.Class != "stopped" || r.Results.S("reason") != "breakpoint-hit" ||
		f.S("func") != "compute" || f.Int("line") != 4 || f.Get("args").Items()[0].S("value") != "5" {
		t.Fatalf("stopped record: %+v", r)
	}
	r, err = Parse(`12^done,stack=[frame={level="0",func="a"},frame={level="1",func="main"}]`)
	if err != nil || !r.HasTok || r.Token != 12 || r.Type != Result || r.Class != "done" {
		t.Fatalf("result record: %+v %v", r, err)
	}
	if frames := r.Results.Get("stack").Fields; len(frames) != 2 || frames[1].Name != "frame" || frames[1].Value.S("func") != "main" {
		t.Fatalf("list of results: %+v", r.Results)
	}
	r, err = Parse(`~"Breakpoint 1, \"q\" \\ tab\there\n\101\e"`)
	if err != nil || r.Type != Console || r.Text != "Breakpoint 1, \"q\" \\ tab\there\nA\x1b" {
		t.Fatalf("console: %q %v", r.Text, err)
	}
	r, err = Parse(`=thread-group-added,id="i1",lists=[],empty={},strs=["a","b"]`)
	if err != nil || r.Results.Get("strs").Items()[1].Str != "b" || r.Results.Get("empty").Kind != Tuple {
		t.Fatalf("notify: %+v %v", r, err)
	}
	if r, err := Parse("(gdb) "); err != nil || r.Type != Prompt {
		t.Fatalf("prompt: %+v %v", r, err)
	}
	if r, err := Parse("3^error,msg=\"No symbol \\\"nosuch\\\" in current context.\"\r"); err != nil || r.Results.S("msg") != `No symbol "nosuch" in current context.` {
		t.Fatalf("error: %+v %v", r, err)
	}
}

func TestParseRefusesGarbage(t *testing.T) {
	for _, line := range []string{
		"", "hello from rank 3", "^", `^done,`, `^done,x`, `^done,x=`, `^done,x="unterminated`,
		`^done,x={a="1"`, `^done,x=[1]`, `5~"tok"`, `^done,x="a"junk`, `*stopped,a={b={c=}}`,
		`99999999999999999999999^done`,
	} {
		if _, err := Parse(line); !errors.Is(err, ErrSyntax) {
			t.Errorf("Parse(%q) = %v, want a syntax error", line, err)
		}
	}
}

func TestQuoteRoundTrip(t *testing.T) {
	for _, s := range []string{"", "x", `a "b" \c`, "tab\tnl\n", "\x01\x7f", "ümlaut"} {
		r, err := Parse("~" + Quote(s))
		if err != nil || r.Text != s {
			t.Errorf("Quote(%q) did not round-trip: %q %v", s, r.Text, err)
		}
	}
}

func FuzzParse(f *testing.F) {
	for _, seed := range []string{
		`*stopped,reason="breakpoint-hit",frame={func="f",args=[{name="a",value="1"}]}`,
		`1^done,stack=[frame={level="0"},frame={level="1"}]`,
		`~"text\n\101"`, `=library-loaded,ranges=[{from="0x1",to="0x2"}]`, "(gdb)",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, line string) {
		r, err := Parse(line)
		if err != nil || r.Type != Console {
			return
		}
		// Whatever text a stream record decodes to, quoting it gives it back.
		again, err := Parse("~" + Quote(r.Text))
		if err != nil || again.Text != r.Text {
			t.Fatalf("%q: quoted %q came back as %q (%v)", line, Quote(r.Text), again.Text, err)
		}
	})
}
