package report

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/sdm-hpc/sdm/wire"
)

// Spec is a tracepoint as --trace-at gives it: LOC[,EXPR...] [if COND].
type Spec struct {
	Text      string
	Location  string
	Exprs     []string
	Condition string
}

// ParseSpec reads LOC[,EXPR...] [if COND]. The commas that part the
// expressions are those outside brackets and quotes, so f(a,b) is one.
func ParseSpec(text string) (Spec, error) {
	s := Spec{Text: text}
	head := text
	if i := strings.Index(text, " if "); i >= 0 {
		head, s.Condition = text[:i], strings.TrimSpace(text[i+4:])
		if s.Condition == "" {
			return s, fmt.Errorf("--trace-at %q: nothing after if", text)
		}
	}
	parts, err := splitTop(head)
	if err != nil {
		return s, fmt.Errorf("--trace-at %q: %v", text, err)
	}
	s.Location = strings.TrimSpace(parts[0])
	if s.Location == "" || strings.ContainsAny(s.Location, " \t") {
		return s, fmt.Errorf("--trace-at %q: want LOCATION[,EXPR...] [if COND], such as solver.c:42,i,residual", text)
	}
	for _, e := range parts[1:] {
		if e = strings.TrimSpace(e); e == "" {
			return s, fmt.Errorf("--trace-at %q: an empty expression", text)
		}
		s.Exprs = append(s.Exprs, e)
	}
	return s, nil
}

// splitTop splits at the commas outside (), [], {} and quotes.
func splitTop(s string) ([]string, error) {
	var parts []string
	depth, start := 0, 0
	var quote byte
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quote != 0:
			if c == '\\' {
				i++
			} else if c == quote {
				quote = 0
			}
		case c == '"' || c == '\'':
			quote = c
		case c == '(' || c == '[' || c == '{':
			depth++
		case c == ')' || c == ']' || c == '}':
			if depth--; depth < 0 {
				return nil, errors.New("a bracket closed that was not open")
			}
		case c == ',' && depth == 0:
			parts = append(parts, s[start:i])
			start = i + 1
		}
	}
	if depth != 0 || quote != 0 {
		return nil, errors.New("a bracket or quote left open")
	}
	return append(parts, s[start:]), nil
}

// setTrace sets a tracepoint's breakpoint in every rank.
func (w *Watcher) setTrace(ctx context.Context, s *Spec) {
	t := &Trace{Spec: s.Text, Location: s.Location, Condition: s.Condition, Exprs: s.Exprs, Hits: []*Hit{}}
	if t.Exprs == nil {
		t.Exprs = []string{}
	}
	w.rep.Traces = append(w.rep.Traces, t)
	line := "break " + s.Location
	if s.Condition != "" {
		line += " if " + s.Condition
	}
	rep := w.exec(ctx, "%s", line)
	for _, g := range rep.Groups {
		var v struct {
			Number  int  `json:"number"`
			Pending bool `json:"pending"`
		}
		if g.Error != "" {
			t.Error += fmt.Sprintf("[%s] %s; ", g.Ranks, g.Error)
		} else if json.Unmarshal(g.Value, &v) == nil && v.Number > 0 {
			t.Breakpoint, t.Pending = v.Number, t.Pending || v.Pending
		}
	}
	if rep.Error != "" {
		t.Error = rep.Error
	}
	t.Error = strings.TrimSuffix(t.Error, "; ")
	if t.Breakpoint > 0 {
		w.traces[t.Breakpoint] = t
	}
	switch {
	case t.Error != "":
		w.say(wire.RankSet{}, "tracepoint %s: %s", s.Text, t.Error)
	case t.Pending:
		w.say(wire.RankSet{}, "tracepoint %s: pending: %s is in no code loaded yet (a library loaded later may hold it)", s.Text, s.Location)
	}
}

// pass records what ranks hold as they pass a tracepoint, each at its
// n-th pass, and lets them go on.
func (w *Watcher) pass(ctx context.Context, t *Trace, ranks wire.RankSet) {
	counts := w.passes[t.Breakpoint]
	if counts == nil {
		counts = map[int]int{}
		w.passes[t.Breakpoint] = counts
	}
	byPass := map[int]wire.RankSet{}
	ranks.Each(func(r int) bool {
		counts[r]++
		byPass[counts[r]] = byPass[counts[r]].Union(wire.Single(r))
		return true
	})
	passes := make([]int, 0, len(byPass))
	for p := range byPass {
		passes = append(passes, p)
	}
	sort.Ints(passes)
	for _, p := range passes {
		if len(t.Hits) >= maxHits {
			t.Dropped++
			continue
		}
		h := &Hit{At: w.since(), Pass: p, Ranks: byPass[p].String(), Values: []Value{}}
		for _, e := range t.Exprs {
			rep := w.exec(ctx, "[%v] compare %s", byPass[p], e)
			h.Values = append(h.Values, Value{Expr: e, Text: compareText(e, rep), Groups: rep.Groups})
		}
		t.Hits = append(t.Hits, h)
	}
	w.cont(ctx, ranks)
}

// compared is the value of compare (docs/JSON.md), as far as a line says.
type compared struct {
	Numbers *struct {
		Min      float64 `json:"min"`
		Max      float64 `json:"max"`
		MinRanks string  `json:"min_ranks"`
		MaxRanks string  `json:"max_ranks"`
		Mean     float64 `json:"mean"`
		NaN      string  `json:"nan"`
		Inf      string  `json:"inf"`
	} `json:"numbers"`
	Others []struct {
		Value string `json:"value"`
		Ranks string `json:"ranks"`
	} `json:"others"`
}

// compareText says in one line what compare answered for expr:
// "i=3", "residual min 1.2e-06 [17] max 0.0041 [40] mean 0.0003".
func compareText(expr string, rep *record) string {
	if rep.Error != "" {
		return expr + ": " + rep.Error
	}
	var parts []string
	for _, g := range rep.Groups {
		if g.Error != "" {
			parts = append(parts, fmt.Sprintf("[%s] %s", g.Ranks, g.Error))
			continue
		}
		var v compared
		if json.Unmarshal(g.Value, &v) != nil {
			continue
		}
		if n := v.Numbers; n != nil {
			if n.Min == n.Max {
				parts = append(parts, fmt.Sprintf("%s=%g", expr, n.Min))
			} else {
				parts = append(parts, fmt.Sprintf("%s min %g [%s] max %g [%s] mean %g", expr, n.Min, n.MinRanks, n.Max, n.MaxRanks, n.Mean))
			}
			if n.NaN != "" {
				parts = append(parts, "NaN at ["+n.NaN+"]")
			}
			if n.Inf != "" {
				parts = append(parts, "Inf at ["+n.Inf+"]")
			}
		}
		switch len(v.Others) {
		case 0:
		case 1:
			parts = append(parts, expr+"="+v.Others[0].Value)
		default:
			var vals []string
			for _, o := range v.Others {
				vals = append(vals, fmt.Sprintf("%s [%s]", o.Value, o.Ranks))
			}
			parts = append(parts, expr+": "+strings.Join(vals, ", "))
		}
	}
	return strings.Join(parts, "; ")
}
