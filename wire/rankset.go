package wire

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// MaxRank is the largest rank a RankSet holds. It keeps counts within an
// int32 and lets a parser refuse absurd input before allocating anything.
const MaxRank = 1<<31 - 2

// span is an inclusive range of ranks.
type span struct{ lo, hi uint32 }

// RankSet is an immutable set of ranks, stored as sorted, disjoint,
// non-adjacent ranges so that the common shapes (all ranks, all but a few)
// stay small at a million ranks. The zero value is the empty set.
type RankSet struct {
	spans []span
}

// Single returns the set holding only rank r.
func Single(r int) RankSet { return Range(r, r) }

// Range returns the set of ranks lo..hi inclusive; empty when hi < lo.
func Range(lo, hi int) RankSet {
	if lo < 0 {
		lo = 0
	}
	if hi > MaxRank {
		hi = MaxRank
	}
	if hi < lo {
		return RankSet{}
	}
	return RankSet{spans: []span{{uint32(lo), uint32(hi)}}}
}

// All returns the set of ranks 0..n-1.
func All(n int) RankSet { return Range(0, n-1) }

// Shift returns s with d added to every rank; ranks that would fall
// below 0 or above MaxRank are left out.
func (s RankSet) Shift(d int) RankSet {
	var b Builder
	for _, sp := range s.spans {
		b.AddRange(int(sp.lo)+d, int(sp.hi)+d)
	}
	return b.Set()
}

// Empty reports whether s holds no rank.
func (s RankSet) Empty() bool { return len(s.spans) == 0 }

// Count returns the number of ranks in s.
func (s RankSet) Count() int {
	n := 0
	for _, sp := range s.spans {
		n += int(sp.hi-sp.lo) + 1
	}
	return n
}

// Ranges returns the number of ranges s is stored as, a measure of its
// size on the wire.
func (s RankSet) Ranges() int { return len(s.spans) }

// Min returns the smallest rank of s, or -1 when s is empty.
func (s RankSet) Min() int {
	if len(s.spans) == 0 {
		return -1
	}
	return int(s.spans[0].lo)
}

// Contains reports whether r is in s.
func (s RankSet) Contains(r int) bool {
	if r < 0 || r > MaxRank {
		return false
	}
	i, _ := slices.BinarySearchFunc(s.spans, uint32(r), func(sp span, x uint32) int {
		switch {
		case sp.hi < x:
			return -1
		case sp.lo > x:
			return 1
		}
		return 0
	})
	return i < len(s.spans) && s.spans[i].lo <= uint32(r) && uint32(r) <= s.spans[i].hi
}

// Equal reports whether s and t hold the same ranks.
func (s RankSet) Equal(t RankSet) bool { return slices.Equal(s.spans, t.spans) }

// Each calls fn for every rank of s in ascending order until fn returns false.
func (s RankSet) Each(fn func(int) bool) {
	for _, sp := range s.spans {
		for r := sp.lo; ; r++ {
			if !fn(int(r)) {
				return
			}
			if r == sp.hi {
				break
			}
		}
	}
}

// Union returns the ranks in s or t.
func (s RankSet) Union(t RankSet) RankSet {
	if len(s.spans) == 0 {
		return t
	}
	if len(t.spans) == 0 {
		return s
	}
	out := make([]span, 0, len(s.spans)+len(t.spans))
	i, j := 0, 0
	for i < len(s.spans) || j < len(t.spans) {
		var next span
		if j >= len(t.spans) || (i < len(s.spans) && s.spans[i].lo <= t.spans[j].lo) {
			next = s.spans[i]
			i++
		} else {
			next = t.spans[j]
			j++
		}
		out = appendSpan(out, next)
	}
	return RankSet{spans: out}
}

// Intersect returns the ranks in both s and t.
func (s RankSet) Intersect(t RankSet) RankSet {
	var out []span
	i, j := 0, 0
	for i < len(s.spans) && j < len(t.spans) {
		a, b := s.spans[i], t.spans[j]
		lo, hi := max(a.lo, b.lo), min(a.hi, b.hi)
		if lo <= hi {
			out = append(out, span{lo, hi})
		}
		if a.hi < b.hi {
			i++
		} else {
			j++
		}
	}
	return RankSet{spans: out}
}

// Intersects reports whether s and t share a rank, without building the
// intersection.
func (s RankSet) Intersects(t RankSet) bool {
	i, j := 0, 0
	for i < len(s.spans) && j < len(t.spans) {
		a, b := s.spans[i], t.spans[j]
		if max(a.lo, b.lo) <= min(a.hi, b.hi) {
			return true
		}
		if a.hi < b.hi {
			i++
		} else {
			j++
		}
	}
	return false
}

// Minus returns the ranks in s that are not in t.
func (s RankSet) Minus(t RankSet) RankSet {
	var out []span
	j := 0
	for _, a := range s.spans {
		for j < len(t.spans) && t.spans[j].hi < a.lo {
			j++
		}
		lo := a.lo
		k := j
		for ; k < len(t.spans) && t.spans[k].lo <= a.hi; k++ {
			b := t.spans[k]
			if b.lo > lo {
				out = append(out, span{lo, b.lo - 1})
			}
			if b.hi >= a.hi {
				lo = a.hi + 1
				break
			}
			lo = max(lo, b.hi+1)
		}
		if lo <= a.hi {
			out = append(out, span{lo, a.hi})
		}
	}
	return RankSet{spans: out}
}

// appendSpan adds sp, which starts at or after the last span's start, and
// merges it with the last span when they overlap or touch.
func appendSpan(out []span, sp span) []span {
	if n := len(out); n > 0 && uint64(sp.lo) <= uint64(out[n-1].hi)+1 {
		out[n-1].hi = max(out[n-1].hi, sp.hi)
		return out
	}
	return append(out, sp)
}

// String prints s the way people read rank sets: "0-3,7". The empty set
// prints as "".
func (s RankSet) String() string {
	var b strings.Builder
	for i, sp := range s.spans {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.FormatUint(uint64(sp.lo), 10))
		if sp.hi != sp.lo {
			b.WriteByte('-')
			b.WriteString(strconv.FormatUint(uint64(sp.hi), 10))
		}
	}
	return b.String()
}

// ErrRankSet is wrapped by every rank-set parse error.
var ErrRankSet = errors.New("bad rank set")

// Set reads the printed form into s: a RankSet is a command-line flag's
// value (pflag.Value).
func (s *RankSet) Set(text string) error {
	set, err := ParseRankSet(text)
	if err == nil {
		*s = set
	}
	return err
}

// Type names the flag's value in --help.
func (s *RankSet) Type() string { return "ranks" }

// ParseRankSet reads the printed form: comma-separated ranks and inclusive
// ranges ("0-3,7,9-12"). Items may overlap and come in any order; spaces
// around items are ignored.
func ParseRankSet(text string) (RankSet, error) {
	var b Builder
	if strings.TrimSpace(text) == "" {
		return RankSet{}, fmt.Errorf("%w: empty", ErrRankSet)
	}
	for item := range strings.SplitSeq(text, ",") {
		item = strings.TrimSpace(item)
		loText, hiText, isRange := strings.Cut(item, "-")
		lo, err := parseRank(loText)
		if err != nil {
			return RankSet{}, fmt.Errorf("%w %q: %v", ErrRankSet, item, err)
		}
		hi := lo
		if isRange {
			if hi, err = parseRank(hiText); err != nil {
				return RankSet{}, fmt.Errorf("%w %q: %v", ErrRankSet, item, err)
			}
			if hi < lo {
				return RankSet{}, fmt.Errorf("%w %q: range ends before it starts", ErrRankSet, item)
			}
		}
		b.AddRange(lo, hi)
	}
	return b.Set(), nil
}

func parseRank(text string) (int, error) {
	text = strings.TrimSpace(text)
	if text == "" {
		return 0, errors.New("missing rank")
	}
	n, err := strconv.ParseUint(text, 10, 32)
	if err != nil || n > MaxRank {
		return 0, fmt.Errorf("%q is not a rank (0-%d)", text, MaxRank)
	}
	return int(n), nil
}

// Builder collects ranks and ranges in any order and turns them into a
// RankSet once, which is how a million single-rank answers merge in
// linear-logarithmic time instead of a union per answer.
type Builder struct {
	spans  []span
	sorted bool // spans are in order and disjoint so far
}

// Add adds rank r; out-of-range ranks are ignored.
func (b *Builder) Add(r int) { b.AddRange(r, r) }

// AddRange adds ranks lo..hi inclusive.
func (b *Builder) AddRange(lo, hi int) {
	lo, hi = max(lo, 0), min(hi, MaxRank)
	if hi < lo {
		return
	}
	b.add(span{uint32(lo), uint32(hi)})
}

// AddSet adds every rank of s.
func (b *Builder) AddSet(s RankSet) {
	for _, sp := range s.spans {
		b.add(sp)
	}
}

func (b *Builder) add(sp span) {
	if len(b.spans) == 0 {
		b.sorted = true
	}
	if n := len(b.spans); n > 0 {
		last := &b.spans[n-1]
		if b.sorted && sp.lo >= last.lo && uint64(sp.lo) <= uint64(last.hi)+1 {
			last.hi = max(last.hi, sp.hi)
			return
		}
		if sp.lo <= last.hi+1 {
			b.sorted = false
		}
	}
	b.spans = append(b.spans, sp)
}

// Set returns the ranks added so far. The builder may be reused afterwards.
func (b *Builder) Set() RankSet {
	if len(b.spans) == 0 {
		return RankSet{}
	}
	spans := slices.Clone(b.spans)
	if !b.sorted {
		slices.SortFunc(spans, func(x, y span) int { return int(int64(x.lo) - int64(y.lo)) })
		out := spans[:1]
		for _, sp := range spans[1:] {
			out = appendSpan(out, sp)
		}
		spans = slices.Clip(out)
	}
	return RankSet{spans: spans}
}
