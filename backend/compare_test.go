package backend_test

import (
	"slices"
	"testing"

	"github.com/sdm-hpc/sdm/backend"
	"github.com/sdm-hpc/sdm/wire"
)

// gdb's values read as numbers, arrays of numbers, or others.
func TestSummarize(t *testing.T) {
	for v, want := range map[string]float64{"42": 42, "-1.5": -1.5, "3.1400000000000001": 3.14, "65 'A'": 65,
		"true": 1, ".FALSE.": 0, "0x10": 16} {
		s := backend.Summarize(v)
		if !s.Leaf || s.Numbers == nil || s.Numbers.Min != want || s.Numbers.Count != 1 || len(s.Elements) != 0 {
			t.Errorf("%q: %+v", v, s)
		}
	}
	for _, v := range []string{"nan(0x8000000000000)", "-nan(0x8000000000000)"} {
		if s := backend.Summarize(v); s.Numbers == nil || s.Numbers.NaN.Empty() || s.Numbers.Count != 0 {
			t.Errorf("%q: %+v", v, s)
		}
	}
	if s := backend.Summarize("-inf"); s.Numbers == nil || s.Numbers.Inf.Empty() {
		t.Errorf("-inf: %+v", s)
	}
	for v, want := range map[string][]float64{"{1, 2, 0 <repeats 3 times>}": {1, 2, 0, 0, 0}, "(1.5, 2.5)": {1.5, 2.5},
		"{{1, 2}, {3, 4}}": {1, 2, 3, 4}} {
		s := backend.Summarize(v)
		var got []float64
		for _, e := range s.Elements {
			got = append(got, e.Min)
		}
		if !slices.Equal(got, want) || s.Length != (wire.Span{Least: len(want), Most: len(want)}) {
			t.Errorf("%q: elements %v, want %v", v, got, want)
		}
	}
	for _, v := range []string{"(int *) 0x601040 <buf>", "{x = 1, y = 2}", `"hello"`, "<optimized out>", "{}"} {
		if s := backend.Summarize(v); s.Numbers != nil || len(s.Others) != 1 || s.Others[0].Value != v {
			t.Errorf("%q: %+v", v, s)
		}
	}
}

// Whatever gdb prints, a summary of one rank comes out, its arrays
// bounded.
func FuzzSummarize(f *testing.F) {
	for _, v := range []string{"42", "{1, 2, 0 <repeats 3 times>}", "(1, 2)", "nan(0x1)", "{x = 1}", "{0 <repeats 99999999 times>}"} {
		f.Add(v)
	}
	f.Fuzz(func(t *testing.T, v string) {
		s := backend.Summarize(v)
		if !s.Leaf || len(s.Elements) > wire.MaxElements || s.Numbers == nil && len(s.Others) != 1 {
			t.Fatalf("%q: %+v", v, s)
		}
	})
}
