package console

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/sdm-hpc/sdm/wire"
)

// parseSet reads a rank set: comma-separated ranks, ranges, "all" and
// names given to sets with defset, as in "0-3,7" or "workers,0".
func (c *Console) parseSet(text string) (wire.RankSet, error) {
	text = strings.TrimSpace(text)
	if text == "" {
		return wire.RankSet{}, usageError("empty rank set")
	}
	var b wire.Builder
	for _, item := range strings.Split(text, ",") {
		item = strings.TrimSpace(item)
		if named, ok := c.named(item); ok {
			b.AddSet(named)
			continue
		}
		ranks, err := wire.ParseRankSet(item)
		if err != nil {
			if isName(item) {
				return wire.RankSet{}, usageError("no rank set called %q (defset %s SET names one)", item, item)
			}
			return wire.RankSet{}, usageError("%v", err)
		}
		b.AddSet(ranks)
	}
	ranks := b.Set()
	if outside := ranks.Minus(wire.All(c.s.Size())); !outside.Empty() {
		return ranks, usageError("ranks %v are not in this job (ranks 0-%d)", outside, c.s.Size()-1)
	}
	return ranks, nil
}

// named returns the set called name ("all" is every rank).
func (c *Console) named(name string) (wire.RankSet, bool) {
	if name == "all" {
		return wire.All(c.s.Size()), true
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	r, ok := c.sets[name]
	return r, ok
}

// isName reports whether s can name a rank set: a letter or _, then
// letters, digits, _ and -.
func isName(s string) bool {
	for i, r := range s {
		letter := r == '_' || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z')
		if !letter && (i == 0 || !(r == '-' || (r >= '0' && r <= '9'))) {
			return false
		}
	}
	return s != ""
}

func runDefset(_ context.Context, c *Console, _ wire.RankSet, args string) error {
	name, set, _ := strings.Cut(args, " ")
	set = strings.TrimSpace(set)
	if !isName(name) || name == "all" || set == "" {
		return usageError("defset needs a name (a letter, then letters, digits, _ or -; not all) and a rank set, such as defset workers 1-63")
	}
	ranks, err := c.parseSet(set)
	if err != nil {
		return err
	}
	c.define(name, ranks)
	c.note("defset "+name, ranks)
	return nil
}

// Define names a rank set, as defset does, and says so; under --json on
// a line of its own, since it answers no command.
func (c *Console) Define(name string, ranks wire.RankSet) {
	c.define(name, ranks)
	if c.opts.JSON {
		c.write(appendJSON(nil, c.stamp("note", map[string]any{"note": "defset " + name, "ranks": ranks.String(), "count": ranks.Count()})))
		return
	}
	c.note("defset "+name, ranks)
}

func (c *Console) define(name string, ranks wire.RankSet) {
	c.mu.Lock()
	c.sets[name] = ranks
	c.mu.Unlock()
}

func runUndefset(_ context.Context, c *Console, _ wire.RankSet, args string) error {
	c.mu.Lock()
	_, ok := c.sets[args]
	delete(c.sets, args)
	c.mu.Unlock()
	if !ok {
		return usageError("no rank set called %q", args)
	}
	return nil
}

func runSets(_ context.Context, c *Console, _ wire.RankSet, args string) error {
	if args != "" {
		return usageError("sets takes no arguments")
	}
	c.mu.Lock()
	names := make([]string, 0, len(c.sets))
	for n := range c.sets {
		names = append(names, n)
	}
	sort.Strings(names)
	lines := []string{fmt.Sprintf("all = [0-%d]", c.s.Size()-1), "focus = [" + c.focus.String() + "]"}
	for _, n := range names {
		lines = append(lines, fmt.Sprintf("%s = [%v]", n, c.sets[n]))
	}
	c.mu.Unlock()
	c.println(strings.Join(lines, "\n"))
	return nil
}

// Size is the number of ranks of the session's job.
func (c *Console) Size() int { return c.s.Size() }
