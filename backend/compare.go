package backend

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/sdm-hpc/sdm/wire"
)

// compare answers compare on a debugger that evaluates expressions: the
// rank's value as a summary of one rank (op.Summaries fills its ranks).
func compare(d Ops, ctx context.Context, c wire.Compare) (wire.Summary, error) {
	vs, err := d.Evaluate(ctx, wire.Exprs{Exprs: []string{c.Expr}})
	if err != nil {
		return wire.Summary{}, fmt.Errorf("%s: %w", wire.OpCompare, err)
	}
	if len(vs) != 1 {
		return wire.Summary{}, errors.New("compare: the debugger gave no value")
	}
	if vs[0].Error != "" {
		return wire.Summary{}, errors.New(vs[0].Error)
	}
	return Summarize(vs[0].Value), nil
}

// Summarize is one rank's value, as gdb prints it, as a summary: a
// number, an array of numbers ("{1, 2, 0 <repeats 6 times>}", or
// Fortran's "(1, 2)"), or any other value.
func Summarize(value string) wire.Summary {
	s := wire.Summary{Leaf: true}
	if x, ok := number(value); ok {
		st := one(x)
		s.Numbers = &st
		return s
	}
	if xs, ok := numbers(value); ok && len(xs) > 0 {
		all := wire.Stats{Exact: true}
		s.Length = wire.Span{Least: len(xs), Most: len(xs)}
		for i, x := range xs {
			if i < wire.MaxElements {
				s.Elements = append(s.Elements, one(x))
			}
			add(&all, x)
		}
		s.Numbers = &all
		return s
	}
	s.Others = []wire.Distinct{{Value: value}}
	return s
}

// one is the statistics of one value of one rank; its rank sets are
// filled by the merger.
func one(x float64) wire.Stats {
	st := wire.Stats{Exact: true}
	add(&st, x)
	return st
}

// add counts x among the values of one rank.
func add(st *wire.Stats, x float64) {
	placeholder := wire.Single(0) // the rank, filled by the merger
	switch {
	case math.IsNaN(x):
		st.NaN = placeholder
		return
	case math.IsInf(x, 0):
		st.Inf = placeholder
		return
	}
	if st.Count == 0 || x < st.Min {
		st.Min = x
	}
	if st.Count == 0 || x > st.Max {
		st.Max = x
	}
	st.Count++
	st.Sum += x
	st.SumSq += x * x
	st.Low, st.High = []wire.RankValue{{Value: st.Min}}, []wire.RankValue{{Value: st.Max}}
	for i, b := range st.Bins {
		if b.Low == x {
			st.Bins[i].Count++
			return
		}
	}
	st.Bins = append(st.Bins, wire.Bin{Low: x, Count: 1})
}

// number reads a scalar as gdb prints it: an integer or a float, nan and
// inf, a character's code ("65 'A'"), a boolean.
func number(v string) (float64, bool) {
	v = strings.TrimSpace(v)
	if i := strings.Index(v, " '"); i > 0 {
		v = v[:i]
	}
	switch v {
	case "true", ".TRUE.":
		return 1, true
	case "false", ".FALSE.":
		return 0, true
	}
	if strings.HasPrefix(strings.TrimPrefix(v, "-"), "nan") {
		return math.NaN(), true
	}
	if strings.Contains(v, "(") || strings.Contains(v, "0x") && !strings.HasPrefix(v, "0x") {
		return 0, false
	}
	x, err := strconv.ParseFloat(v, 64)
	if err != nil {
		n, ierr := strconv.ParseInt(v, 0, 64)
		if ierr != nil {
			return 0, false
		}
		return float64(n), true
	}
	return x, true
}

// numbers reads an array of numbers, nested arrays flattened, repeats
// unfolded (at most MaxElements of each).
func numbers(v string) ([]float64, bool) {
	v = strings.TrimSpace(v)
	if len(v) < 2 || !(v[0] == '{' && v[len(v)-1] == '}' || v[0] == '(' && v[len(v)-1] == ')') {
		return nil, false
	}
	var out []float64
	for _, part := range strings.FieldsFunc(v, func(r rune) bool { return strings.ContainsRune("{}(),", r) }) {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		n := 1
		if i := strings.Index(part, " <repeats "); i > 0 {
			times, err := strconv.Atoi(strings.TrimSuffix(part[i+len(" <repeats "):], " times>"))
			if err != nil {
				return nil, false
			}
			n, part = min(times, wire.MaxElements), part[:i]
		}
		x, ok := number(part)
		if !ok {
			return nil, false
		}
		for range n {
			out = append(out, x)
		}
	}
	return out, true
}
