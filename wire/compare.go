package wire

// OpCompare evaluates one expression on every rank of a set and answers
// what it is over them as statistics rather than a list: the tree merges
// the ranks' answers into one (op.Summaries), so what reaches the front
// end does not grow with the ranks. B: Compare; A: Summary.
const OpCompare = "compare"

// Compare names the expression, as print takes it.
type Compare struct{ Expr string }

// Summary is an expression over ranks. A rank's value is a number
// (Numbers), an array of numbers (Elements, element by element, and
// Numbers over all of them), or something else (Others, by value).
type Summary struct {
	// Leaf marks a rank's own answer, whose rank sets are not filled yet:
	// the first merger fills them with the ranks that gave it.
	Leaf     bool
	Numbers  *Stats
	Elements []Stats // the arrays' elements, up to MaxElements
	Length   Span    // the arrays' lengths
	Others   []Distinct
	// Rest are the ranks whose values were other than numbers beyond
	// MaxDistinct distinct values.
	Rest RankSet
}

// MaxElements is how many elements of an array a Summary keeps;
// MaxDistinct how many distinct values that are not numbers.
const (
	MaxElements = 256
	MaxDistinct = 16
)

// Span is a least and a most.
type Span struct{ Least, Most int }

// Stats are numbers of many ranks. Sum and SumSq give the mean and the
// standard deviation; Low and High the ranks with the lowest and highest
// values (Extremes of each), from which the front end tells outliers;
// Bins a histogram whose bins are 2^Exp wide (or, with Exact, the
// values themselves), at most MaxBins of them.
type Stats struct {
	Count              int
	Sum, SumSq         float64
	Min, Max           float64
	MinRanks, MaxRanks RankSet
	NaN, Inf           RankSet // not counted in the others
	Low, High          []RankValue
	Exact              bool
	Exp                int
	Bins               []Bin // ascending
}

// Extremes is how many of the lowest and highest values Stats keeps.
const Extremes = 3

// MaxBins bounds a histogram.
const MaxBins = 64

// RankValue is one rank's value.
type RankValue struct {
	Rank  int
	Value float64
}

// Bin is a histogram's bin: from Low (a value, or a bin's index times
// 2^Exp) on, Count values.
type Bin struct {
	Low   float64
	Count int
}

// Distinct is a value that is not a number and the ranks that have it.
type Distinct struct {
	Value string
	Ranks RankSet
}
