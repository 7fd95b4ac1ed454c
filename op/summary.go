package op

import (
	"cmp"
	"math"
	"slices"

	"github.com/sdm-hpc/sdm/wire"
)

// Summaries is the merger of compare's answers (wire.Summary): every node
// folds its sources' summaries into one, as STAT folds stacks, so that
// the front end receives one summary whatever the number of ranks.
// Failures merge as Identical merges them. The zero value is ready to use.
type Summaries struct {
	sum      wire.Summary
	ranks    wire.Builder
	any      bool
	failures Identical
}

// Add implements Merger.
func (m *Summaries) Add(ranks wire.RankSet, status wire.Status, body []byte) {
	var s wire.Summary
	if status != wire.StatusOK || wire.Decode(body, &s) != nil {
		m.failures.Add(ranks, status, body)
		return
	}
	if s.Leaf {
		s = stamp(s, ranks)
	}
	if !m.any {
		m.sum, m.any = s, true
	} else {
		m.sum = MergeSummaries(m.sum, s)
	}
	m.ranks.AddSet(ranks)
}

// Groups implements Merger: the summary, as one group of every rank that
// answered, and the failures.
func (m *Summaries) Groups() []wire.Group {
	groups := m.failures.Groups()
	if !m.any {
		return groups
	}
	return inOrder(groups, wire.Group{Ranks: m.ranks.Set(), Status: wire.StatusOK, Body: wire.MustEncode(m.sum)})
}

// stamp fills a rank's own summary with the ranks that gave it (one rank,
// or ranks whose answers were alike).
func stamp(s wire.Summary, ranks wire.RankSet) wire.Summary {
	s.Leaf = false
	fill := func(st *wire.Stats) {
		if st == nil {
			return
		}
		if st.Count > 0 {
			st.MinRanks, st.MaxRanks = ranks, ranks
		}
		if !st.NaN.Empty() {
			st.NaN = ranks
		}
		if !st.Inf.Empty() {
			st.Inf = ranks
		}
		for _, l := range []*[]wire.RankValue{&st.Low, &st.High} {
			var out []wire.RankValue
			ranks.Each(func(r int) bool {
				for _, v := range *l {
					out = append(out, wire.RankValue{Rank: r, Value: v.Value})
				}
				return len(out) < wire.Extremes
			})
			*l = out[:min(len(out), wire.Extremes)]
		}
		// A rank's answer counts its values once; ranks alike count them
		// once each.
		n := float64(ranks.Count())
		st.Count *= ranks.Count()
		st.Sum, st.SumSq = st.Sum*n, st.SumSq*n
		for i := range st.Bins {
			st.Bins[i].Count *= ranks.Count()
		}
	}
	if s.Numbers != nil {
		n := *s.Numbers
		fill(&n)
		s.Numbers = &n
	}
	s.Elements = slices.Clone(s.Elements)
	for i := range s.Elements {
		fill(&s.Elements[i])
	}
	for i := range s.Others {
		s.Others[i].Ranks = ranks
	}
	if !s.Rest.Empty() {
		s.Rest = ranks
	}
	return s
}

// MergeSummaries is the summary of the ranks of a and of b.
func MergeSummaries(a, b wire.Summary) wire.Summary {
	out := wire.Summary{Rest: a.Rest.Union(b.Rest)}
	switch {
	case a.Numbers == nil:
		out.Numbers = b.Numbers
	case b.Numbers == nil:
		out.Numbers = a.Numbers
	default:
		n := mergeStats(*a.Numbers, *b.Numbers)
		out.Numbers = &n
	}
	switch {
	case len(a.Elements) == 0:
		out.Elements, out.Length = b.Elements, b.Length
	case len(b.Elements) == 0:
		out.Elements, out.Length = a.Elements, a.Length
	default:
		out.Length = wire.Span{Least: min(a.Length.Least, b.Length.Least), Most: max(a.Length.Most, b.Length.Most)}
		for i := range max(len(a.Elements), len(b.Elements)) {
			switch {
			case i >= len(a.Elements):
				out.Elements = append(out.Elements, b.Elements[i])
			case i >= len(b.Elements):
				out.Elements = append(out.Elements, a.Elements[i])
			default:
				out.Elements = append(out.Elements, mergeStats(a.Elements[i], b.Elements[i]))
			}
		}
	}
	byValue := map[string]wire.RankSet{}
	for _, d := range append(slices.Clone(a.Others), b.Others...) {
		byValue[d.Value] = byValue[d.Value].Union(d.Ranks)
	}
	for v, r := range byValue {
		out.Others = append(out.Others, wire.Distinct{Value: v, Ranks: r})
	}
	// The values held by most ranks are kept, the others told as ranks.
	slices.SortFunc(out.Others, func(x, y wire.Distinct) int {
		return cmp.Or(y.Ranks.Count()-x.Ranks.Count(), x.Ranks.Min()-y.Ranks.Min())
	})
	if len(out.Others) > wire.MaxDistinct {
		for _, d := range out.Others[wire.MaxDistinct:] {
			out.Rest = out.Rest.Union(d.Ranks)
		}
		out.Others = out.Others[:wire.MaxDistinct]
	}
	return out
}

// mergeStats is the statistics of the values of a and of b.
func mergeStats(a, b wire.Stats) wire.Stats {
	out := wire.Stats{Count: a.Count + b.Count, Sum: a.Sum + b.Sum, SumSq: a.SumSq + b.SumSq,
		NaN: a.NaN.Union(b.NaN), Inf: a.Inf.Union(b.Inf)}
	switch {
	case a.Count == 0:
		out.Min, out.Max, out.MinRanks, out.MaxRanks = b.Min, b.Max, b.MinRanks, b.MaxRanks
	case b.Count == 0:
		out.Min, out.Max, out.MinRanks, out.MaxRanks = a.Min, a.Max, a.MinRanks, a.MaxRanks
	default:
		out.Min, out.MinRanks = extreme(a.Min, a.MinRanks, b.Min, b.MinRanks, -1)
		out.Max, out.MaxRanks = extreme(a.Max, a.MaxRanks, b.Max, b.MaxRanks, 1)
	}
	order := func(x, y wire.RankValue) int { return cmp.Or(cmp.Compare(x.Value, y.Value), x.Rank-y.Rank) }
	out.Low = slices.SortedFunc(slices.Values(append(slices.Clone(a.Low), b.Low...)), order)
	out.Low = out.Low[:min(len(out.Low), wire.Extremes)]
	high := slices.SortedFunc(slices.Values(append(slices.Clone(a.High), b.High...)), func(x, y wire.RankValue) int {
		return cmp.Or(cmp.Compare(y.Value, x.Value), x.Rank-y.Rank)
	})
	out.High = high[:min(len(high), wire.Extremes)]
	out.Exact, out.Exp, out.Bins = histogram(a, b, out.Min, out.Max, out.Count > 0)
	return out
}

// extreme is the lower (sign -1) or higher (1) of two values, with the
// ranks that hold it.
func extreme(x float64, xr wire.RankSet, y float64, yr wire.RankSet, sign int) (float64, wire.RankSet) {
	switch c := cmp.Compare(x, y) * sign; {
	case c > 0:
		return x, xr
	case c < 0:
		return y, yr
	}
	return x, xr.Union(yr)
}

// histogram merges two histograms: the values themselves while there are
// at most MaxBins of them, else bins of 2^Exp, Exp the least that needs
// at most MaxBins. Both are the same whatever order values are merged
// in: a part never needs wider bins than the whole does.
func histogram(a, b wire.Stats, lo, hi float64, any bool) (exact bool, exp int, bins []wire.Bin) {
	if !any {
		return true, 0, nil
	}
	if a.Exact && b.Exact || a.Count == 0 && b.Exact || b.Count == 0 && a.Exact {
		count := map[float64]int{}
		for _, x := range append(slices.Clone(a.Bins), b.Bins...) {
			count[x.Low] += x.Count
		}
		if len(count) <= wire.MaxBins {
			return true, 0, sortedBins(count)
		}
	}
	// Wide enough for the whole range at the least: never wider than the
	// least that holds every value.
	exp = math.MinInt32
	if d := (hi - lo) / wire.MaxBins; d > 0 && !math.IsInf(d, 0) {
		exp = int(math.Floor(math.Log2(d)))
	} else if d > 0 {
		exp = 1024
	}
	for _, s := range []wire.Stats{a, b} {
		if !s.Exact && s.Count > 0 {
			exp = max(exp, s.Exp)
		}
	}
	if exp == math.MinInt32 {
		exp = 0
	}
	for ; ; exp++ {
		count := map[float64]int{}
		for _, s := range []wire.Stats{a, b} {
			for _, x := range s.Bins {
				low := x.Low
				if !s.Exact {
					low = math.Ldexp(low, s.Exp) // back to a value: the bin's low end
				}
				count[math.Floor(math.Ldexp(low, -exp))] += x.Count
			}
		}
		if len(count) <= wire.MaxBins {
			return false, exp, sortedBins(count)
		}
	}
}

func sortedBins(count map[float64]int) []wire.Bin {
	bins := make([]wire.Bin, 0, len(count))
	for low, n := range count {
		bins = append(bins, wire.Bin{Low: low, Count: n})
	}
	slices.SortFunc(bins, func(x, y wire.Bin) int { return cmp.Compare(x.Low, y.Low) })
	return bins
}
