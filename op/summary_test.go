package op

import (
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"

	"github.com/sdm-hpc/sdm/wire"
)

// leaf is a rank's own answer of one number, as a backend gives it.
func leaf(x float64) []byte {
	st := wire.Stats{Exact: true, NaN: wire.RankSet{}, Inf: wire.RankSet{}}
	switch {
	case math.IsNaN(x):
		st.NaN = wire.Single(0)
	case math.IsInf(x, 0):
		st.Inf = wire.Single(0)
	default:
		st = wire.Stats{Count: 1, Sum: x, SumSq: x * x, Min: x, Max: x, Low: []wire.RankValue{{Value: x}},
			High: []wire.RankValue{{Value: x}}, Exact: true, Bins: []wire.Bin{{Low: x, Count: 1}}}
	}
	return wire.MustEncode(wire.Summary{Leaf: true, Numbers: &st})
}

// mergeSummaries merges each rank's number through a tree of mergers.
func mergeSummaries(t *testing.T, value func(int) float64, n, fanin int, perm []int) wire.Summary {
	t.Helper()
	groups := mergeTree(func() Merger { return &Summaries{} }, func(r int) []byte { return leaf(value(r)) }, n, fanin, perm)
	if len(groups) != 1 {
		t.Fatalf("want one summary, got %d groups", len(groups))
	}
	s, err := Compare.DecodeAnswer(groups[0].Body)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestSummariesWhateverTheOrder(t *testing.T) {
	const n = 1000
	rng := rand.New(rand.NewPCG(7, 8))
	values := make([]float64, n)
	for r := range values {
		values[r] = math.Round(rng.NormFloat64()*1000) / 10
	}
	values[17], values[400], values[401] = math.NaN(), math.Inf(1), 1e6
	value := func(r int) float64 { return values[r] }
	first := mergeSummaries(t, value, n, 2, rand.New(rand.NewPCG(1, 1)).Perm(n))
	st := *first.Numbers
	if st.Count != n-2 || st.Max != 1e6 || !st.MaxRanks.Equal(wire.Single(401)) || !st.NaN.Equal(wire.Single(17)) ||
		!st.Inf.Equal(wire.Single(400)) || st.High[0] != (wire.RankValue{Rank: 401, Value: 1e6}) {
		t.Fatalf("count %d max %v on %v, NaN %v, Inf %v, high %v", st.Count, st.Max, st.MaxRanks, st.NaN, st.Inf, st.High)
	}
	if st.Exact || len(st.Bins) > wire.MaxBins {
		t.Errorf("%d distinct values should make at most %d bins, got %d (exact %v)", n, wire.MaxBins, len(st.Bins), st.Exact)
	}
	total := 0
	for _, b := range st.Bins {
		total += b.Count
	}
	if total != st.Count {
		t.Errorf("the bins hold %d values of %d", total, st.Count)
	}
	for i, fanin := range []int{3, 16, 1000} {
		other := *mergeSummaries(t, value, n, fanin, rand.New(rand.NewPCG(uint64(i+2), 3)).Perm(n)).Numbers
		if other.Min != st.Min || other.Max != st.Max || !other.MinRanks.Equal(st.MinRanks) || other.Exp != st.Exp ||
			!slices.Equal(other.Bins, st.Bins) || !slices.Equal(other.Low, st.Low) || !slices.Equal(other.High, st.High) ||
			math.Abs(other.Sum-st.Sum) > 1e-6*math.Abs(st.Sum) {
			t.Errorf("fan-in %d merged otherwise: %+v against %+v", fanin, other, st)
		}
	}
}

func TestSummariesOfFewValuesAreExact(t *testing.T) {
	s := mergeSummaries(t, func(r int) float64 { return float64(r % 3) }, 30, 4, rand.New(rand.NewPCG(5, 5)).Perm(30))
	st := *s.Numbers
	if !st.Exact || !slices.Equal(st.Bins, []wire.Bin{{Low: 0, Count: 10}, {Low: 1, Count: 10}, {Low: 2, Count: 10}}) ||
		st.MinRanks.String() != "0,3,6,9,12,15,18,21,24,27" || st.Sum != 30 {
		t.Errorf("%+v", st)
	}
}

// Other values merge by value, the most common kept.
func TestSummariesOfOtherValues(t *testing.T) {
	var m Summaries
	for r := range 60 {
		v := "\"a\""
		if r >= 30 {
			v = strconv.Quote(strconv.Itoa(r)) // thirty distinct values beyond
		}
		m.Add(wire.Single(r), wire.StatusOK, wire.MustEncode(wire.Summary{Leaf: true, Others: []wire.Distinct{{Value: v}}}))
	}
	s, _ := Compare.DecodeAnswer(m.Groups()[0].Body)
	if len(s.Others) != wire.MaxDistinct || s.Others[0].Value != "\"a\"" || s.Others[0].Ranks.String() != "0-29" ||
		s.Rest.Count() != 30-(wire.MaxDistinct-1) {
		t.Errorf("others %v, rest %v", s.Others, s.Rest)
	}
}
