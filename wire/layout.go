package wire

import (
	"fmt"
	"strings"
)

// Layout says which ranks each server of a tree serves: Layout[i] are
// server i's. A nil Layout is one rank per server, server i serving rank
// i, as a job wrapped by `mpirun sdm` runs. A server serving a host's
// ranks (a job acquired through MPIR) is one tree node for all of them.
type Layout []RankSet

// ParseLayout reads a layout as String writes it: each server's ranks in
// index order, separated by colons ("0-3:4-7"). The sets must be
// disjoint and together make ranks 0 to N-1.
func ParseLayout(text string) (Layout, error) {
	if text == "" {
		return nil, nil
	}
	parts := strings.Split(text, ":")
	l := make(Layout, len(parts))
	for i, p := range parts {
		s, err := ParseRankSet(p)
		if err != nil {
			return nil, fmt.Errorf("layout, server %d: %w", i, err)
		}
		l[i] = s
	}
	return l, l.Verify()
}

// Verify checks that every server has a rank, no rank has two servers,
// and no rank is missing.
func (l Layout) Verify() error {
	var all Builder
	total := 0
	for i, s := range l {
		if s.Empty() {
			return fmt.Errorf("layout: server %d has no ranks", i)
		}
		all.AddSet(s)
		total += s.Count()
	}
	if got := all.Set(); got.Count() != total {
		return fmt.Errorf("layout: a rank is served twice in %s", l)
	} else if total > 0 && !got.Equal(All(total)) {
		return fmt.Errorf("layout: ranks %v are missing from %s", All(total).Minus(got), l)
	}
	return nil
}

// String is the layout as ParseLayout reads it.
func (l Layout) String() string {
	parts := make([]string, len(l))
	for i, s := range l {
		parts[i] = s.String()
	}
	return strings.Join(parts, ":")
}

// Ranks are server i's ranks: Layout[i], or rank i for a nil Layout.
func (l Layout) Ranks(i int) RankSet {
	if l == nil {
		return Single(i)
	}
	return l[i]
}

// Size is how many ranks the layout serves with servers servers: each
// server one rank for a nil Layout.
func (l Layout) Size(servers int) int {
	if l == nil {
		return servers
	}
	n := 0
	for _, s := range l {
		n += s.Count()
	}
	return n
}

// Set parses text into l, for flags (pflag.Value).
func (l *Layout) Set(text string) error {
	v, err := ParseLayout(text)
	if err != nil {
		return err
	}
	*l = v
	return nil
}

// Type names the flag's value (pflag.Value).
func (l *Layout) Type() string { return "layout" }
