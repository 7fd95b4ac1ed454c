package wire

// AppendMerged appends item to list, merging it into an earlier item that
// same says carries the same news, as long as no item after that one
// shares a rank with it: merging past such an item would put that rank's
// news out of order. ranks gives access to an item's rank set; passes,
// when not nil, names the items that item may be merged past anyway
// because their order against it does not matter. An item never merges
// into one that holds some of its ranks already: a rank that says the
// same thing twice (prints the same line twice) is heard twice.
//
// The tree merges events this way on each link, and the front end once
// more over its display window.
func AppendMerged[T any](list []T, item T, ranks func(*T) *RankSet, same, passes func(a, b *T) bool) []T {
	r := *ranks(&item)
	for j := len(list) - 1; j >= 0; j-- {
		prev := &list[j]
		shared := ranks(prev).Intersects(r)
		if same(prev, &item) && !shared {
			*ranks(prev) = ranks(prev).Union(r)
			return list
		}
		if shared && (passes == nil || !passes(prev, &item)) {
			break
		}
	}
	return append(list, item)
}
