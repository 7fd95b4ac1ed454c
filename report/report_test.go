package report

import (
	"bytes"
	"encoding/json"
	"html/template"
	"strings"
	"testing"
	"time"
)

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
	limit := 1e-3
	many := map[int]string{}
	for r := range 20 {
		many[r] = "1"
	}
	many[7] = "100"
	for _, c := range []struct {
		vals  map[int]string
		limit *float64
		want  string
	}{
		{vals: map[int]string{0: "3", 1: "3", 2: "3"}, want: "i=3"},
		{vals: many, want: "i min 1 [0-6,8-19] max 100 [7] mean 5.95; outliers [7] (over 3 sd from the mean)"},
		{map[int]string{17: "1e-06", 40: "0.004", 3: "0.001", 5: "0.002"}, &limit, "i min 1e-06 [17] max 0.004 [40] mean 0.00175025; ranks 5,40 over 0.001"},
		{vals: map[int]string{17: "1e-06", 40: "0.004", 3: "0.001", 5: "nan(0x8000000000000)"}, want: "i min 1e-06 [17] max 0.004 [40] mean 0.001667; NaN at [5]"},
		{vals: map[int]string{0: "1", 1: "nan", 2: "1"}, want: "i min 1 [0,2] max 1 [0,2] mean 1; NaN at [1]"},
		{vals: map[int]string{0: `"a"`, 1: `"b"`, 2: `"a"`, 3: "<error: No symbol>"}, want: `i: "a" [0,2], "b" [1], <error: No symbol> [3]`},
		{vals: map[int]string{0: "a", 1: "b", 2: "c", 3: "d", 4: "e", 5: "e"}, want: "i: a [0], b [1], c [2], d [3], 1 more"},
		{want: "i: no value"},
	} {
		if got := valueText("i", c.vals, c.limit); got != c.want {
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
