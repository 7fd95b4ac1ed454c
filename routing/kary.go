package routing

// The K-ary tree gives each node a contiguous range of positions, and so of
// server indices: the node owning [lo, hi) is lo, and it splits (lo, hi) into
// at most K chunks as even as possible, earlier chunks taking the extra,
// each chunk owned by its first position. Contiguous subtrees let a set of
// ranks gathered from a subtree be described as a few ranges even at a
// million ranks.

// span returns the range [lo, hi) owned by position p (1 <= p <= Size, or 0)
// and its parent's position, or -1 for the master. It descends from the
// master, one level per step.
func (t Tree) span(p int) (lo, hi, parent int) {
	lo, hi, parent = 0, t.Size+1, -1
	for lo != p {
		start, size := karyChunk(lo, hi, t.Fanout, p)
		parent = lo
		lo, hi = start, start+size
	}
	return lo, hi, parent
}

// karySplit returns how the children of the node owning [lo, hi) are cut: c
// chunks, the first r of q+1 positions and the rest of q.
func karySplit(lo, hi, k int) (c, q, r int) {
	m := hi - lo - 1
	if m <= 0 {
		return 0, 0, 0
	}
	c = min(k, m)
	return c, m / c, m % c
}

// karyChunk returns the chunk of [lo, hi) that holds p, lo < p < hi.
func karyChunk(lo, hi, k, p int) (start, size int) {
	_, q, r := karySplit(lo, hi, k)
	off := p - (lo + 1)
	big := r * (q + 1)
	if off < big {
		return lo + 1 + off/(q+1)*(q+1), q + 1
	}
	return lo + 1 + big + (off-big)/q*q, q
}

func karyChildren(lo, hi, k int, add func(int)) {
	c, q, r := karySplit(lo, hi, k)
	start := lo + 1
	for j := range c {
		add(start)
		start += q
		if j < r {
			start++
		}
	}
}

// karyDepth follows the largest chunk, which is the first, down from a range
// of n positions; depth grows with range size, so that path is the longest.
func karyDepth(n, k int) int {
	d := 0
	for n > 1 {
		n = (n - 1 + k - 1) / k
		d++
	}
	return d
}
