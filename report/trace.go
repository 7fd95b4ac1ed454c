package report

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
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
	t := &Trace{Spec: s.Text, Location: s.Location, Condition: s.Condition, Exprs: s.Exprs, Hits: []*Hit{}, passes: map[int]*passed{}}
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
// n-th pass, and lets them go on. Each expression is evaluated once for
// all the ranks that stopped together, whatever their passes; the passes
// are merged over ranks when the report is written (hits).
func (w *Watcher) pass(ctx context.Context, t *Trace, ranks wire.RankSet) {
	counts := w.passes[t.Breakpoint]
	if counts == nil {
		counts = map[int]int{}
		w.passes[t.Breakpoint] = counts
	}
	var kept wire.RankSet
	at := w.since()
	ranks.Each(func(r int) bool {
		counts[r]++
		if p := counts[r]; p > maxHits {
			t.Dropped++
		} else {
			kept = kept.Union(wire.Single(r))
			if t.passes[p] == nil {
				t.passes[p] = &passed{at: at, vals: make([]map[int]string, len(t.Exprs))}
			}
			t.passes[p].ranks = t.passes[p].ranks.Union(wire.Single(r))
		}
		return true
	})
	for i, e := range t.Exprs {
		if kept.Empty() {
			break
		}
		rep := w.exec(ctx, "[%v] print %s", kept, e)
		for _, g := range rep.Groups {
			val := g.Error
			if val == "" {
				json.Unmarshal(g.Value, &val)
			} else {
				val = "<error: " + val + ">"
			}
			gr, err := wire.ParseRankSet(g.Ranks)
			if err != nil {
				continue
			}
			gr.Each(func(r int) bool {
				p := t.passes[counts[r]]
				if p.vals[i] == nil {
					p.vals[i] = map[int]string{}
				}
				p.vals[i][r] = val
				return true
			})
		}
	}
	w.cont(ctx, ranks)
}

// passed is what the ranks held at one pass of a tracepoint: each
// expression's value by rank.
type passed struct {
	at    float64
	ranks wire.RankSet
	vals  []map[int]string
}

// hits merges each pass over the ranks that made it.
func (t *Trace) hits() {
	passes := make([]int, 0, len(t.passes))
	for p := range t.passes {
		passes = append(passes, p)
	}
	sort.Ints(passes)
	for _, n := range passes {
		p := t.passes[n]
		h := &Hit{At: p.at, Pass: n, Ranks: p.ranks.String(), Values: []Value{}}
		for i, e := range t.Exprs {
			h.Values = append(h.Values, Value{Expr: e, Text: valueText(e, p.vals[i])})
		}
		t.Hits = append(t.Hits, h)
	}
}

// valueText says in one line what ranks hold: "i=3" when they agree,
// "residual min 1.2e-06 [17] max 0.0041 [40] mean 0.0003" for numbers
// that differ, the distinct values with their ranks for others.
func valueText(expr string, vals map[int]string) string {
	if len(vals) == 0 {
		return expr + ": no value"
	}
	by := map[string]wire.RankSet{}
	numbers, n := true, 0
	var lo, hi, sum float64
	var loRanks, hiRanks, nan wire.RankSet
	for r, v := range vals {
		one := wire.Single(r)
		by[v] = by[v].Union(one)
		x, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if err != nil && strings.HasPrefix(strings.TrimPrefix(v, "-"), "nan(") {
			x, err = math.NaN(), nil // gdb's NaN: nan(0x8000000000000)
		}
		switch {
		case err != nil:
			numbers = false
			continue
		case math.IsNaN(x):
			nan = nan.Union(one)
			continue
		}
		if n == 0 || x < lo {
			lo, loRanks = x, one
		} else if x == lo {
			loRanks = loRanks.Union(one)
		}
		if n == 0 || x > hi {
			hi, hiRanks = x, one
		} else if x == hi {
			hiRanks = hiRanks.Union(one)
		}
		n++
		sum += x
	}
	if len(by) == 1 {
		for v := range by {
			return expr + "=" + v
		}
	}
	if numbers && n > 0 {
		text := fmt.Sprintf("%s min %g [%v] max %g [%v] mean %g", expr, lo, loRanks, hi, hiRanks, sum/float64(n))
		if !nan.Empty() {
			text += fmt.Sprintf("; NaN at [%v]", nan)
		}
		return text
	}
	distinct := make([]string, 0, len(by))
	for v := range by {
		distinct = append(distinct, v)
	}
	sort.Slice(distinct, func(i, j int) bool { return by[distinct[i]].Min() < by[distinct[j]].Min() })
	parts := make([]string, 0, 4)
	for i, v := range distinct {
		if i == 4 {
			parts = append(parts, fmt.Sprintf("%d more", len(distinct)-i))
			break
		}
		parts = append(parts, fmt.Sprintf("%s [%v]", v, by[v]))
	}
	return expr + ": " + strings.Join(parts, ", ")
}
