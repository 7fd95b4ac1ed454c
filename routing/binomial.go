package routing

import "math/bits"

// The binomial tree is the one PTP's SDM builds, so that sdm servers and PTP
// agree on who talks to whom. In position space (master 0, server id at
// id+1) a position's parent is the position with its highest set bit
// cleared, and its children set one more bit above that one.

func binomialParent(p int) int {
	return p &^ (1 << (bits.Len(uint(p)) - 1))
}

// binomialChildren calls add for each child of p in ascending order; size is
// the number of positions, servers plus master.
func binomialChildren(p, size int, add func(int)) {
	for i := bits.Len(uint(p)); ; i++ {
		c := p | 1<<i
		if c >= size {
			return
		}
		add(c)
	}
}

// binomialWalk calls fn for every server position in p's subtree. The
// descendants of p are exactly the positions that agree with p in the bits
// up to its highest one, so they form an arithmetic progression and need no
// recursion.
func binomialWalk(p, size int, fn func(int)) {
	step := 1 << bits.Len(uint(p))
	start := p
	if p == 0 {
		start = step // the master is not a server
	}
	for q := start; q < size; q += step {
		fn(q)
	}
}

// binomialDepth is the largest number of set bits among positions 1..n,
// since each step towards the master clears one bit.
func binomialDepth(n int) int {
	return max(bits.OnesCount(uint(n)), bits.Len(uint(n))-1)
}
