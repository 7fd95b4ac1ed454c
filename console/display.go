package console

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/sdm-hpc/sdm/op"
	"github.com/sdm-hpc/sdm/wire"
)

// Displays (gdb's display EXPR) live in the console, not in each rank's
// gdb: they survive restart, which starts new gdbs, and at a stop all the
// displays of the ranks that stopped are evaluated in one command
// (evaluate), one round trip for every rank and every expression, however
// many there are. Each display keeps the rank set it was made for.

// display is one expression shown at every stop of its ranks.
type display struct {
	n     int
	expr  string
	ranks wire.RankSet
}

// displays is the console's list of displays.
type displays struct {
	list []display
	next int // the number of the last display made
}

func runDisplay(ctx context.Context, c *Console, ranks wire.RankSet, args string) error {
	if args == "" {
		c.showDisplays(ctx, ranks, false)
		return nil
	}
	c.mu.Lock()
	c.displays.next++
	d := display{n: c.displays.next, expr: args, ranks: ranks}
	c.displays.list = append(c.displays.list, d)
	c.mu.Unlock()
	c.showDisplays(ctx, ranks, true, d)
	return nil
}

// runUndisplay is undisplay [N...]: no numbers deletes them all, after a
// question at the terminal.
func runUndisplay(_ context.Context, c *Console, _ wire.RankSet, args string) error {
	var ids []int
	for _, f := range strings.Fields(strings.ReplaceAll(args, ",", " ")) {
		n, err := strconv.Atoi(f)
		if err != nil || n < 1 {
			return usageError("undisplay: %q is not a display number (info display lists them)", f)
		}
		ids = append(ids, n)
	}
	if len(ids) == 0 {
		if c.confirm("Delete all auto-display expressions?") {
			c.mu.Lock()
			c.displays.list = nil
			c.mu.Unlock()
		}
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	var missing []string
	for _, n := range ids {
		i := slices.IndexFunc(c.displays.list, func(d display) bool { return d.n == n })
		if i < 0 {
			missing = append(missing, strconv.Itoa(n))
			continue
		}
		c.displays.list = slices.Delete(c.displays.list, i, i+1)
	}
	if len(missing) > 0 {
		return usageError("undisplay: no display %s (info display lists them)", strings.Join(missing, ", "))
	}
	return nil
}

func infoDisplay(_ context.Context, c *Console, _ wire.RankSet, args string) error {
	if args != "" {
		return usageError("info display takes no arguments")
	}
	c.mu.Lock()
	list := slices.Clone(c.displays.list)
	c.mu.Unlock()
	if c.opts.JSON {
		for _, d := range list {
			c.emit(map[string]any{"op": "display", "number": d.n, "expr": d.expr, "ranks": d.ranks.String(), "count": d.ranks.Count()})
		}
		return nil
	}
	if len(list) == 0 {
		c.println("There are no auto-display expressions now.")
		return nil
	}
	lines := []string{"Auto-display expressions now in effect:"}
	for _, d := range list {
		lines = append(lines, fmt.Sprintf("%d: %s  [%v]", d.n, d.expr, d.ranks))
	}
	c.println(strings.Join(lines, "\n"))
	return nil
}

// showDisplays evaluates the displays of ranks (only those given, if
// any) and prints them, one line per display and distinct value. A rank
// that cannot answer is reported only when asked (a new display, display
// alone), not at a stop.
func (c *Console) showDisplays(ctx context.Context, ranks wire.RankSet, asked bool, only ...display) {
	list := only
	if len(list) == 0 {
		c.mu.Lock()
		list = slices.Clone(c.displays.list)
		c.mu.Unlock()
	}
	var target wire.RankSet
	exprs := make([]string, 0, len(list))
	shown := list[:0:0]
	for _, d := range list {
		if r := d.ranks.Intersect(ranks); !r.Empty() {
			target = target.Union(r)
			exprs = append(exprs, d.expr)
			shown = append(shown, d)
		}
	}
	if len(shown) == 0 {
		return
	}
	groups, err := c.s.Command(ctx, target, wire.OpEvaluate, op.Evaluate.Body(wire.Exprs{Exprs: exprs}), c.opts.Timeout)
	if err != nil {
		if asked {
			c.println("display: " + err.Error())
		}
		return
	}
	type shownValue struct {
		ranks wire.RankSet
		value wire.Value
	}
	byDisplay := make([][]shownValue, len(shown))
	for _, g := range groups {
		if g.Status != wire.StatusOK {
			if asked {
				c.printReply(wire.OpEvaluate, "", g)
			}
			continue
		}
		values, err := op.Evaluate.DecodeAnswer(g.Body)
		if err != nil || len(values) != len(shown) {
			continue
		}
		for i, d := range shown {
			r := g.Ranks.Intersect(d.ranks)
			if r.Empty() || values[i].Absent && !asked {
				continue // out of its function: gdb shows it only inside
			}
			j := slices.IndexFunc(byDisplay[i], func(s shownValue) bool { return s.value == values[i] })
			if j < 0 {
				byDisplay[i] = append(byDisplay[i], shownValue{r, values[i]})
			} else {
				byDisplay[i][j].ranks = byDisplay[i][j].ranks.Union(r)
			}
		}
	}
	var text []byte
	for i, d := range shown {
		slices.SortFunc(byDisplay[i], func(a, b shownValue) int { return a.ranks.Min() - b.ranks.Min() })
		for _, s := range byDisplay[i] {
			if c.opts.JSON {
				obj := map[string]any{"ranks": s.ranks.String(), "count": s.ranks.Count(), "op": "display", "number": d.n, "expr": d.expr}
				if s.value.Error != "" {
					obj["error"] = s.value.Error
				} else {
					obj["value"] = s.value.Value
				}
				c.emit(obj)
				continue
			}
			line := fmt.Sprintf("%d: %s = %s", d.n, d.expr, s.value.Value)
			if s.value.Error != "" {
				line = fmt.Sprintf("%d: %s: %s", d.n, d.expr, s.value.Error)
			}
			text = append(append(text, c.block(s.ranks, s.value.Error != "", strings.Split(line, "\n"))...), '\n')
		}
	}
	c.write(text)
}
