package console

import (
	"context"
	"fmt"
	"math"
	"strings"

	"github.com/sdm-hpc/sdm/op"
	"github.com/sdm-hpc/sdm/wire"
)

// compare shows one expression over a rank set as statistics: for
// numbers the least and most with the ranks that hold them, the mean and
// standard deviation, NaN and Inf, outliers and a histogram; for arrays
// the same element by element and the first element where ranks differ;
// for other values the distinct values with their ranks. The tree merges
// the ranks' summaries (op.Summaries).

const compareUsage = "compare EXPR"

func runCompare(ctx context.Context, c *Console, ranks wire.RankSet, args string) error {
	expr := strings.TrimSpace(args)
	if expr == "" {
		return usageError("%s", compareUsage)
	}
	groups, err := c.s.Command(ctx, ranks, wire.OpCompare, wire.MustEncode(wire.Compare{Expr: expr}), c.opts.Timeout)
	if err != nil {
		return err
	}
	var failed []wire.Group
	for _, g := range groups {
		s, err := op.Compare.DecodeAnswer(g.Body)
		if g.Status != wire.StatusOK || err != nil {
			failed = append(failed, g)
			continue
		}
		if c.opts.JSON {
			c.emit(map[string]any{"ranks": g.Ranks.String(), "count": g.Ranks.Count(), "op": "compare", "status": "ok",
				"value": SummaryJSON(s)})
			continue
		}
		c.println(fmt.Sprintf("[%v] %s", g.Ranks, strings.Join(SummaryText(expr, s), "\n  ")))
	}
	failed, gones := c.goneOf(ctx, wire.OpCompare, failed)
	for _, g := range failed {
		c.printReply(wire.OpCompare, "", g)
	}
	c.printGone(wire.OpCompare, gones)
	return nil
}

// SummaryText says a summary in a few lines, the first naming expr.
func SummaryText(expr string, s wire.Summary) []string {
	var lines []string
	switch {
	case len(s.Elements) > 0:
		length := fmt.Sprint(s.Length.Least)
		if s.Length.Most != s.Length.Least {
			length = fmt.Sprintf("%d-%d", s.Length.Least, s.Length.Most)
		}
		first := firstDifference(s.Elements)
		head := fmt.Sprintf("%s: arrays of %s elements", expr, length)
		if first < 0 {
			lines = append(lines, head+", alike on every rank")
		} else {
			lines = append(lines, fmt.Sprintf("%s; ranks differ first at [%d]: %s", head, first, statsText(s.Elements[first])))
		}
		if s.Numbers != nil {
			lines = append(lines, "all elements: "+statsText(*s.Numbers))
		}
	case s.Numbers != nil && s.Numbers.Count > 0 && s.Numbers.Min == s.Numbers.Max && s.Numbers.NaN.Empty() &&
		s.Numbers.Inf.Empty():
		lines = append(lines, fmt.Sprintf("%s: %s on every rank", expr, num(s.Numbers.Min)))
	case s.Numbers != nil:
		lines = append(lines, expr+": "+statsText(*s.Numbers))
		if o := outliers(*s.Numbers); o != "" {
			lines = append(lines, o)
		}
		if h := sparkline(*s.Numbers); h != "" {
			lines = append(lines, h)
		}
	default:
		lines = append(lines, expr+":")
	}
	for _, d := range s.Others {
		lines = append(lines, fmt.Sprintf("[%v] %s", d.Ranks, d.Value))
	}
	if !s.Rest.Empty() {
		lines = append(lines, fmt.Sprintf("[%v] other values", s.Rest))
	}
	return lines
}

// firstDifference is the first element whose ranks do not all hold one
// number, or -1.
func firstDifference(elements []wire.Stats) int {
	for i, e := range elements {
		if e.Min != e.Max || !e.NaN.Empty() || !e.Inf.Empty() {
			return i
		}
	}
	return -1
}

// statsText says numbers' count, extremes with their ranks, mean and
// standard deviation, NaN and Inf.
func statsText(st wire.Stats) string {
	var parts []string
	if st.Count > 0 {
		mean, sd := meanSD(st)
		parts = append(parts, fmt.Sprintf("%d %s, min %s (%s %v), max %s (%s %v), mean %s, sd %s", st.Count,
			plural(st.Count, "value", "values"), num(st.Min), rankWord(st.MinRanks), st.MinRanks, num(st.Max),
			rankWord(st.MaxRanks), st.MaxRanks, num(mean), num(sd)))
	}
	if !st.NaN.Empty() {
		parts = append(parts, fmt.Sprintf("NaN on %s %v", rankWord(st.NaN), st.NaN))
	}
	if !st.Inf.Empty() {
		parts = append(parts, fmt.Sprintf("Inf on %s %v", rankWord(st.Inf), st.Inf))
	}
	return strings.Join(parts, "; ")
}

func meanSD(st wire.Stats) (mean, sd float64) {
	n := float64(st.Count)
	mean = st.Sum / n
	return mean, math.Sqrt(max(st.SumSq/n-mean*mean, 0))
}

// num prints a number short.
func num(x float64) string { return fmt.Sprintf("%.4g", x) }

// outliers are the ranks among the extremes more than three standard
// deviations from the mean.
func outliers(st wire.Stats) string {
	if st.Count < 3 {
		return ""
	}
	mean, sd := meanSD(st)
	if sd == 0 {
		return ""
	}
	var out []string
	seen := map[int]bool{}
	for _, v := range append(append([]wire.RankValue{}, st.Low...), st.High...) {
		if math.Abs(v.Value-mean) > 3*sd && !seen[v.Rank] {
			seen[v.Rank] = true
			out = append(out, fmt.Sprintf("rank %d = %s", v.Rank, num(v.Value)))
		}
	}
	if len(out) == 0 {
		return ""
	}
	return "outliers (over 3 sd from the mean): " + strings.Join(out, ", ")
}

// sparkline draws the histogram in eight columns from min to max.
func sparkline(st wire.Stats) string {
	if st.Count < 2 || st.Min == st.Max {
		return ""
	}
	const columns = 8
	var counts [columns]int
	for _, b := range st.Bins {
		low := b.Low
		if !st.Exact {
			low = math.Ldexp(low, st.Exp)
		}
		i := int(float64(columns) * (low - st.Min) / (st.Max - st.Min))
		counts[min(max(i, 0), columns-1)] += b.Count
	}
	most := 0
	for _, n := range counts {
		most = max(most, n)
	}
	bars := []rune("▁▂▃▄▅▆▇█")
	var b strings.Builder
	for _, n := range counts {
		if n == 0 {
			b.WriteRune(' ')
			continue
		}
		b.WriteRune(bars[(n*(len(bars)-1)+most-1)/most])
	}
	return fmt.Sprintf("histogram %s |%s| %s", num(st.Min), b.String(), num(st.Max))
}

// SummaryJSON is a summary as --json gives it.
func SummaryJSON(s wire.Summary) map[string]any {
	out := map[string]any{}
	if s.Numbers != nil {
		out["numbers"] = statsJSON(*s.Numbers)
	}
	if len(s.Elements) > 0 {
		elems := make([]map[string]any, len(s.Elements))
		for i, e := range s.Elements {
			elems[i] = statsJSON(e)
		}
		out["elements"], out["first_difference"] = elems, firstDifference(s.Elements)
		out["length_least"], out["length_most"] = s.Length.Least, s.Length.Most
	}
	if len(s.Others) > 0 {
		others := make([]map[string]any, len(s.Others))
		for i, d := range s.Others {
			others[i] = map[string]any{"value": d.Value, "ranks": d.Ranks.String()}
		}
		out["others"] = others
	}
	if !s.Rest.Empty() {
		out["other_ranks"] = s.Rest.String()
	}
	return out
}

func statsJSON(st wire.Stats) map[string]any {
	out := map[string]any{"count": st.Count, "nan": st.NaN.String(), "inf": st.Inf.String()}
	if st.Count > 0 {
		mean, sd := meanSD(st)
		out["min"], out["max"], out["mean"], out["sd"] = st.Min, st.Max, mean, sd
		out["min_ranks"], out["max_ranks"] = st.MinRanks.String(), st.MaxRanks.String()
	}
	return out
}
