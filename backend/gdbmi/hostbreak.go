package gdbmi

import (
	"context"
	"fmt"
	"strconv"
	"strings"
)

// A view's breakpoints are gdb's, made the rank's alone by a condition on
// the inferior, and numbered from 1 for the rank, as a gdb of its own
// numbers them.

// scope is the condition that keeps a breakpoint to the view's inferior.
func (v *view) scope() string { return "$_inferior == " + strconv.Itoa(v.inf) }

// scoped adds the view's scope to a breakpoint's condition.
func (v *view) scoped(cond string) string {
	if strings.TrimSpace(cond) == "" {
		return v.scope()
	}
	return v.scope() + " && (" + cond + ")"
}

// unscoped is the condition the rank gave, without the view's scope.
func (v *view) unscoped(cond string) string {
	cond = strings.TrimPrefix(cond, v.scope())
	cond = strings.TrimPrefix(cond, " && (")
	return strings.TrimSuffix(cond, ")")
}

// breakInsert makes a breakpoint or a watchpoint for the rank alone.
func (v *view) breakInsert(ctx context.Context, name string, args []string) (Record, string, error) {
	var out []string
	cond := ""
	for i := 0; i < len(args); i++ {
		switch {
		case name == "-break-insert" && args[i] == "-c" && i+1 < len(args):
			cond = unquote(args[i+1])
			i++
		case name == "-break-insert" && args[i] == "-p" && i+1 < len(args):
			n, _ := strconv.Atoi(args[i+1])
			v.mu.Lock()
			id, ok := v.global[n]
			v.mu.Unlock()
			if !ok {
				return Record{}, "", newRefusal(fmt.Sprintf("Unknown thread %s.", args[i+1]))
			}
			out = append(out, "-p", strconv.Itoa(id))
			i++
		default:
			out = append(out, args[i])
		}
	}
	command := name
	if name == "-break-insert" {
		command += " -c " + Quote(v.scoped(cond))
	}
	if len(out) > 0 {
		command += " " + strings.Join(out, " ")
	}
	r, text, err := v.h.g.Run(ctx, inject(command, v.context()))
	if err != nil {
		return r, text, err
	}
	key := "bkpt"
	for _, k := range []string{"wpt", "hw-rwpt", "hw-awpt"} {
		if r.Results.Has(k) {
			key = k
		}
	}
	point := r.Results.Get(key)
	id := point.Int("number")
	if name == "-break-watch" {
		if _, _, err := v.h.g.Run(ctx, fmt.Sprintf("-break-condition %d %s", id, v.scope())); err != nil {
			v.h.g.Run(ctx, fmt.Sprintf("-break-delete %d", id))
			return Record{}, "", err
		}
	}
	v.mu.Lock()
	v.lastPoint++
	n := v.lastPoint
	v.points[id], v.numbers[n] = n, id
	v.mu.Unlock()
	v.h.mu.Lock()
	v.h.points[id] = v
	v.h.mu.Unlock()
	r.Results = withValue(r.Results, key, v.shown(point))
	return r, text, nil
}

// shown is a breakpoint of gdb's as the rank knows it.
func (v *view) shown(point Value) Value {
	v.mu.Lock()
	n := v.points[point.Int("number")]
	v.mu.Unlock()
	point = with(point, "number", strconv.Itoa(n))
	// gdb sets a breakpoint in every inferior's program: the rank's
	// location is the one in its own.
	if locs := point.Get("locations"); locs.Kind == List {
		point = without(point, "locations")
		for _, loc := range locs.Items() {
			for _, g := range loc.Get("thread-groups").Items() {
				if g.Str != v.group {
					continue
				}
				for _, f := range loc.Fields {
					if f.Name != "number" && f.Name != "thread-groups" && f.Name != "enabled" {
						point = withValue(point, f.Name, f.Value)
					}
				}
			}
		}
	}
	if cond := v.unscoped(point.S("cond")); cond == "" {
		point = without(point, "cond")
	} else {
		point = with(point, "cond", cond)
	}
	return without(point, "thread-groups")
}

// breakNumbers runs a command on breakpoints by the rank's numbers: no
// numbers, for -break-delete, are all of the rank's.
func (v *view) breakNumbers(ctx context.Context, name string, args []string) (Record, string, error) {
	var ids []string
	var missing []string
	v.mu.Lock()
	numbers := args
	if name == "-break-after" || name == "-break-condition" {
		numbers = args[:min(1, len(args))]
	}
	for _, a := range numbers {
		n, err := strconv.Atoi(a)
		id, ok := v.numbers[n]
		if err != nil || !ok {
			missing = append(missing, fmt.Sprintf("No breakpoint number %s.\n", a))
			continue
		}
		ids = append(ids, strconv.Itoa(id))
	}
	if name == "-break-delete" && len(args) == 0 {
		for _, id := range v.numbers {
			ids = append(ids, strconv.Itoa(id))
		}
	}
	v.mu.Unlock()
	if name == "-break-after" || name == "-break-condition" {
		if len(ids) == 0 {
			return Record{}, "", newRefusal(strings.TrimSpace(strings.Join(missing, "")))
		}
		rest := strings.Join(args[1:], " ")
		if name == "-break-condition" {
			rest = v.scoped(rest)
		}
		return v.h.g.Run(ctx, name+" "+ids[0]+" "+rest)
	}
	text := strings.Join(missing, "")
	if len(ids) == 0 {
		return done(), text, nil
	}
	r, out, err := v.h.g.Run(ctx, name+" "+strings.Join(ids, " "))
	if err == nil && name == "-break-delete" {
		v.forget(ids)
	}
	return r, text + out, err
}

// forget drops deleted breakpoints of gdb's from the view's numbers.
func (v *view) forget(ids []string) {
	v.mu.Lock()
	for _, s := range ids {
		id, _ := strconv.Atoi(s)
		delete(v.numbers, v.points[id])
		delete(v.points, id)
	}
	v.mu.Unlock()
	v.h.mu.Lock()
	for _, s := range ids {
		id, _ := strconv.Atoi(s)
		delete(v.h.points, id)
	}
	v.h.mu.Unlock()
}

// breakList lists the rank's breakpoints, by its numbers.
func (v *view) breakList(ctx context.Context) (Record, string, error) {
	r, out, err := v.h.g.Run(ctx, "-break-list")
	if err != nil {
		return r, out, err
	}
	table := r.Results.Get("BreakpointTable")
	var mine []Field
	for _, f := range table.Get("body").Fields {
		v.mu.Lock()
		_, ok := v.points[f.Value.Int("number")]
		v.mu.Unlock()
		if ok {
			f.Value = v.shown(f.Value)
			mine = append(mine, f)
		}
	}
	table = withValue(table, "body", Value{Kind: List, Fields: mine})
	r.Results = withValue(r.Results, "BreakpointTable", table)
	return r, out, nil
}
