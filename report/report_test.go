package report

import (
	"bytes"
	"encoding/json"
	"html/template"
	"strings"
	"testing"
	"time"
)

func TestParseSpec(t *testing.T) {
	for _, c := range []struct {
		in        string
		loc, cond string
		exprs     []string
	}{
		{"compute", "compute", "", nil},
		{"solver.c:42,i,residual", "solver.c:42", "", []string{"i", "residual"}},
		{"solver.c:42, f(a, b), x[1,2] if i > 3 && j", "solver.c:42", "i > 3 && j", []string{"f(a, b)", "x[1,2]"}},
		{`main,"a,b",'c'`, "main", "", []string{`"a,b"`, `'c'`}},
	} {
		s, err := ParseSpec(c.in)
		if err != nil || s.Location != c.loc || s.Condition != c.cond || strings.Join(s.Exprs, "|") != strings.Join(c.exprs, "|") {
			t.Errorf("ParseSpec(%q) = %+v, %v; want %q %q %q", c.in, s, err, c.loc, c.exprs, c.cond)
		}
	}
	for _, bad := range []string{"", ",x", "main,", "main,f(x", "main,x)", "main if ", `main,"open`, "two words"} {
		if s, err := ParseSpec(bad); err == nil {
			t.Errorf("ParseSpec(%q) = %+v, want an error", bad, s)
		}
	}
}

func FuzzParseSpec(f *testing.F) {
	for _, s := range []string{"compute,value", "a.c:1,f(x,y) if i", `m,"\",",x`, "x if", "(,)"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		s, err := ParseSpec(in)
		if err != nil {
			return
		}
		if s.Location == "" {
			t.Errorf("ParseSpec(%q): no location and no error", in)
		}
		for _, e := range s.Exprs {
			if strings.TrimSpace(e) == "" {
				t.Errorf("ParseSpec(%q): an empty expression", in)
			}
		}
	})
}

// The recorder takes the console's lines however the writes cut them.
func TestRecorderJoinsCutLines(t *testing.T) {
	var seen []string
	r := recorder{seen: func(rec record) { seen = append(seen, rec.Type+":"+rec.Event) }}
	text := `{"type":"event","event":"stopped","ranks":"1"}` + "\n" + `{"type":"reply","ok":true,"groups":[]}` + "\nnot json\n"
	for i := 0; i < len(text); i += 7 {
		r.Write([]byte(text[i:min(i+7, len(text))]))
	}
	if got := strings.Join(seen, ","); got != "event:stopped,reply:" {
		t.Errorf("seen %q", got)
	}
	if rep := r.takeReply(); rep == nil || !rep.OK {
		t.Errorf("reply %+v", rep)
	}
	if evs := r.takeEvents(); len(evs) != 1 || evs[0].Ranks != "1" {
		t.Errorf("events %+v", evs)
	}
}

func TestValueText(t *testing.T) {
	for _, c := range []struct {
		vals map[int]string
		want string
	}{
		{map[int]string{0: "3", 1: "3", 2: "3"}, "i=3"},
		{map[int]string{17: "1e-06", 40: "0.004", 3: "0.001", 5: "nan(0x8000000000000)"}, "i min 1e-06 [17] max 0.004 [40] mean 0.001667; NaN at [5]"},
		{map[int]string{0: "1", 1: "nan", 2: "1"}, "i min 1 [0,2] max 1 [0,2] mean 1; NaN at [1]"},
		{map[int]string{0: `"a"`, 1: `"b"`, 2: `"a"`, 3: "<error: No symbol>"}, `i: "a" [0,2], "b" [1], <error: No symbol> [3]`},
		{map[int]string{0: "a", 1: "b", 2: "c", 3: "d", 4: "e", 5: "e"}, "i: a [0], b [1], c [2], d [3], 1 more"},
		{nil, "i: no value"},
	} {
		if got := valueText("i", c.vals); got != c.want {
			t.Errorf("valueText(%v) = %q, want %q", c.vals, got, c.want)
		}
	}
}

// The page holds what the summary says, the tree as SVG, and nothing
// that reaches out: no script, no link, no source from elsewhere; what
// the program printed is text, never markup.
func TestPageStandsAlone(t *testing.T) {
	tree := json.RawMessage(`{"roots":[{"func":"main","file":"x.c","line":3,"ranks":"0-3","count":4,"children":[
		{"func":"MPI_Recv","file":"","line":0,"ranks":"0-2","count":3},{"func":"<evil>","file":"x.c","line":9,"ranks":"3","count":1}]}],
		"classes":[{"ranks":"0-2","count":3,"label":"MPI_Recv"},{"ranks":"3","count":1,"label":"compute at x.c:9"}]}`)
	r := &Report{Version: Version, Program: []string{"./x"}, Ranks: 4, Started: time.Unix(0, 0), Outcome: "hung", Status: 137,
		Hangs:  []*Shot{{Why: "hang", Ranks: "0-3", Stacks: tree, Deadlock: json.RawMessage(`{"lines":["diagnosis: ranks 0-2 wait for rank 3"]}`)}},
		Output: []Tail{{Ranks: "3", Lines: []string{"<script>alert(1)</script>"}}},
		Exits:  []Exit{{Ranks: "0-3", Count: 4, What: "killed"}}}
	r.Summary = summary(r)
	var b bytes.Buffer
	if err := page(&b, r); err != nil {
		t.Fatal(err)
	}
	html := b.String()
	for _, want := range []string{"<svg", "[0-2] (3)", "main at x.c:3  [0-3] (4)", "&lt;evil&gt;", "compute at x.c:9", "diagnosis: ranks 0-2 wait for rank 3", "&lt;script&gt;alert(1)", "[0-3] killed"} {
		if !strings.Contains(html, want) {
			t.Errorf("no %q in the page", want)
		}
	}
	for _, bad := range []string{"<script", "<link", "src=", "http://", "https://", "<evil>"} {
		if strings.Contains(strings.ReplaceAll(html, `xmlns="http://www.w3.org/2000/svg"`, ""), bad) {
			t.Errorf("%q in the page", bad)
		}
	}
	if got := treeSVG(nil); got != template.HTML("") {
		t.Errorf("treeSVG(nil) = %q", got)
	}
}
