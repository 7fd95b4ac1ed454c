package report

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/sdm-hpc/sdm/console"
	"github.com/sdm-hpc/sdm/wire"
)

// Spec is a tracepoint as --trace-at gives it: LOC[,EXPR...] [if COND].
type Spec struct {
	Text string
	wire.Break
}

// ParseSpec reads LOC[,EXPR...] [if COND] as the console's trace command
// does.
func ParseSpec(text string) (Spec, error) {
	br, err := console.ParseTrace(text)
	if err != nil {
		return Spec{}, fmt.Errorf("--trace-at %q: %v", text, err)
	}
	return Spec{Text: text, Break: br}, nil
}

// setTrace sets a tracepoint in every rank.
func (w *Watcher) setTrace(ctx context.Context, s *Spec) {
	t := &Trace{Spec: s.Text, Location: s.Location, Condition: s.Condition, Exprs: s.Trace, Hits: []*Hit{}, passes: map[int]*passed{}}
	if t.Exprs == nil {
		t.Exprs = []string{}
	}
	w.rep.Traces = append(w.rep.Traces, t)
	rep := w.exec(ctx, "trace %s", s.Text)
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

// pass records what ranks held at a pass through a tracepoint, as their
// debuggers told it; the passes are merged over ranks when the report is
// written (hits).
func (w *Watcher) pass(ranks wire.RankSet, tr wire.Traced) {
	t := w.traces[tr.Breakpoint]
	if t == nil {
		return
	}
	if tr.Pass > maxHits {
		t.Dropped += ranks.Count()
		return
	}
	p := t.passes[tr.Pass]
	if p == nil {
		p = &passed{at: w.since(), vals: make([]map[int]string, len(t.Exprs))}
		t.passes[tr.Pass] = p
	}
	p.ranks = p.ranks.Union(ranks)
	for i, v := range tr.Values {
		if i >= len(p.vals) {
			break
		}
		if p.vals[i] == nil {
			p.vals[i] = map[int]string{}
		}
		ranks.Each(func(r int) bool {
			p.vals[i][r] = v
			return true
		})
	}
}

// passed is what the ranks held at one pass of a tracepoint: each
// expression's value by rank.
type passed struct {
	at    float64
	ranks wire.RankSet
	vals  []map[int]string
}

// hits merges each pass over the ranks that made it; limits name, for
// an expression, the value over which its ranks are named.
func (t *Trace) hits(limits map[string]float64) {
	passes := make([]int, 0, len(t.passes))
	for p := range t.passes {
		passes = append(passes, p)
	}
	sort.Ints(passes)
	for _, n := range passes {
		p := t.passes[n]
		h := &Hit{At: p.at, Pass: n, Ranks: p.ranks.String(), Values: []Value{}}
		for i, e := range t.Exprs {
			limit, ok := limits[e]
			var over *float64
			if ok {
				over = &limit
			}
			h.Values = append(h.Values, Value{Expr: e, Text: valueText(e, p.vals[i], over)})
		}
		t.Hits = append(t.Hits, h)
	}
}

// valueText says in one line what ranks hold: "i=3" when they agree,
// "residual min 1.2e-06 [17] max 0.0041 [40] mean 0.0003" for numbers
// that differ, then the ranks over the limit (when there is one) and
// those more than three standard deviations from the mean; the distinct
// values with their ranks for others.
func valueText(expr string, vals map[int]string, limit *float64) string {
	if len(vals) == 0 {
		return expr + ": no value"
	}
	by := map[string]wire.RankSet{}
	nums := map[int]float64{}
	var nan wire.RankSet
	for r, v := range vals {
		by[v] = by[v].Union(wire.Single(r))
		x, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if err != nil && strings.HasPrefix(strings.TrimPrefix(v, "-"), "nan(") {
			x, err = math.NaN(), nil // gdb's NaN: nan(0x8000000000000)
		}
		switch {
		case err != nil:
			nums = nil
		case math.IsNaN(x):
			nan = nan.Union(wire.Single(r))
		case nums != nil:
			nums[r] = x
		}
	}
	if len(by) == 1 {
		for v := range by {
			return expr + "=" + v
		}
	}
	if len(nums) > 0 {
		return expr + numbersText(nums, nan, limit)
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

// numbersText is what numbers that differ over ranks come to: least and
// most with their ranks, the mean, the ranks over limit, the outliers
// (more than three standard deviations from the mean, among three ranks
// or more), the ranks holding NaN.
func numbersText(nums map[int]float64, nan wire.RankSet, limit *float64) string {
	var lo, hi, sum, sumSq float64
	var loRanks, hiRanks, over wire.RankSet
	first := true
	for r, x := range nums {
		one := wire.Single(r)
		switch {
		case first || x < lo:
			lo, loRanks = x, one
		case x == lo:
			loRanks = loRanks.Union(one)
		}
		switch {
		case first || x > hi:
			hi, hiRanks = x, one
		case x == hi:
			hiRanks = hiRanks.Union(one)
		}
		if limit != nil && x > *limit {
			over = over.Union(one)
		}
		first = false
		sum += x
		sumSq += x * x
	}
	n := float64(len(nums))
	mean := sum / n
	text := fmt.Sprintf(" min %g [%v] max %g [%v] mean %g", lo, loRanks, hi, hiRanks, mean)
	if limit != nil && !over.Empty() {
		text += fmt.Sprintf("; ranks %v over %g", over, *limit)
	}
	if sd := math.Sqrt(max(sumSq/n-mean*mean, 0)); len(nums) >= 3 && sd > 0 {
		var out wire.RankSet
		for r, x := range nums {
			if math.Abs(x-mean) > 3*sd {
				out = out.Union(wire.Single(r))
			}
		}
		if !out.Empty() {
			text += fmt.Sprintf("; outliers [%v] (over 3 sd from the mean)", out)
		}
	}
	if !nan.Empty() {
		text += fmt.Sprintf("; NaN at [%v]", nan)
	}
	return text
}
