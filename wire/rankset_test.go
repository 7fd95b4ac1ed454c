package wire

import (
	"errors"
	"math/rand/v2"
	"testing"
)

func TestParseAndPrint(t *testing.T) {
	cases := map[string]string{
		"0-3,7":        "0-3,7",
		"7,0-3":        "0-3,7",
		"0,1,2,3":      "0-3",
		" 5 , 2-4 ":    "2-5",
		"1-10,3-4,12":  "1-10,12",
		"2147483645":   "2147483645",
		"0-0":          "0",
		"9,8,7,100-99": "", // invalid, checked below
	}
	for in, want := range cases {
		s, err := ParseRankSet(in)
		if in == "9,8,7,100-99" {
			if !errors.Is(err, ErrRankSet) {
				t.Errorf("ParseRankSet(%q) = %v, want a range error", in, err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("ParseRankSet(%q): %v", in, err)
		}
		if got := s.String(); got != want {
			t.Errorf("ParseRankSet(%q) = %q, want %q", in, got, want)
		}
	}
	for _, bad := range []string{"", "a", "1-", "-3", "1,,2", "3-1", "99999999999", "1-2-3"} {
		if _, err := ParseRankSet(bad); !errors.Is(err, ErrRankSet) {
			t.Errorf("ParseRankSet(%q) = %v, want ErrRankSet", bad, err)
		}
	}
}

// naive is a map-based reference implementation to check the set algebra.
type naive map[int]bool

func (n naive) set() RankSet {
	var b Builder
	for r := range n {
		b.Add(r)
	}
	return b.Set()
}

func randomNaive(rng *rand.Rand, universe int) naive {
	n := naive{}
	for r := 0; r < universe; r++ {
		if rng.IntN(3) == 0 {
			n[r] = true
		}
	}
	return n
}

func TestAlgebraMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 500; i++ {
		universe := 1 + rng.IntN(60)
		a, b := randomNaive(rng, universe), randomNaive(rng, universe)
		sa, sb := a.set(), b.set()
		union, inter, minus := naive{}, naive{}, naive{}
		for r := range a {
			union[r] = true
			if b[r] {
				inter[r] = true
			} else {
				minus[r] = true
			}
		}
		for r := range b {
			union[r] = true
		}
		check := func(name string, got RankSet, want naive) {
			t.Helper()
			if !got.Equal(want.set()) || got.Count() != len(want) {
				t.Fatalf("%s(%v, %v) = %v, want %v", name, sa, sb, got, want.set())
			}
		}
		check("Union", sa.Union(sb), union)
		check("Intersect", sa.Intersect(sb), inter)
		check("Minus", sa.Minus(sb), minus)
		if sa.Intersects(sb) != (len(inter) > 0) {
			t.Fatalf("Intersects(%v, %v) wrong", sa, sb)
		}
		for r := 0; r < universe; r++ {
			if sa.Contains(r) != a[r] {
				t.Fatalf("Contains(%v, %d) wrong", sa, r)
			}
		}
		back, err := ParseRankSet(sa.String())
		if len(a) > 0 && (err != nil || !back.Equal(sa)) {
			t.Fatalf("round trip of %v: %v %v", sa, back, err)
		}
	}
}

func TestBuilderUnorderedAndReuse(t *testing.T) {
	var b Builder
	for _, r := range []int{9, 3, 4, 5, 1, 2, 9, 10, -1} {
		b.Add(r)
	}
	if got := b.Set().String(); got != "1-5,9-10" {
		t.Fatalf("got %q", got)
	}
	b.AddRange(6, 8)
	if got := b.Set().String(); got != "1-10" {
		t.Fatalf("after AddRange got %q", got)
	}
	var each []int
	Range(3, 5).Union(Single(8)).Each(func(r int) bool { each = append(each, r); return r < 5 })
	if len(each) != 3 || each[2] != 5 {
		t.Fatalf("Each stopped wrongly: %v", each)
	}
	if Range(5, 4).Count() != 0 || All(0).Min() != -1 || All(4).Min() != 0 {
		t.Fatal("edge cases of Range/All/Min")
	}
}

func BenchmarkUnionMillionStrided(b *testing.B) {
	var odd, even Builder
	for r := 0; r < 1<<20; r += 2 {
		even.Add(r)
		odd.Add(r + 1)
	}
	so, se := odd.Set(), even.Set()
	b.ResetTimer()
	for b.Loop() {
		if so.Union(se).Count() != 1<<20 {
			b.Fatal("bad union")
		}
	}
}

func BenchmarkParseMillion(b *testing.B) {
	text := All(1 << 20).Minus(Single(37)).String()
	for b.Loop() {
		if _, err := ParseRankSet(text); err != nil {
			b.Fatal(err)
		}
	}
}
