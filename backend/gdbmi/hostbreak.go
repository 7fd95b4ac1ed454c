package gdbmi

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// A view's breakpoints are gdb's, numbered from 1 for the rank as a gdb
// of its own numbers them, and kept to the ranks they are for by a
// condition on the inferior ($_inferior == N | …, before the rank's own
// condition). A breakpoint several ranks of the host set alike (the same
// location and flags, no condition) is one of gdb's, which they share:
// gdb then re-reads one breakpoint, not one a rank, at every library load
// of every inferior. A rank that changes its share (enable, disable, a
// condition, an ignore count) gets a breakpoint of its own first. One that
// can only be one rank's (temporary, ignore counts, a thread's, a
// watchpoint, a condition of the rank's) is never shared.
//
// A rank's condition is never shared because gdb 13 reads a condition, at
// every location of the breakpoint, in the program of the inferior it has
// selected: where the ranks' programs lie at the same addresses (a PIE
// with address randomisation off, as gdb runs it), another rank's
// location gets that inferior's block, its local variables are not found
// in the other rank's frame, and the failing evaluation stops that rank
// every time. A breakpoint of one rank's, its condition read with the
// rank's inferior selected, evaluates the rank's part at its own location
// only: elsewhere $_inferior == N is false first.
//
// A shared breakpoint that every rank of the host has (a break on every
// rank) has no condition at all: gdb reads a condition anew at each
// location whenever it re-sets the breakpoint (each program start and
// library load of every inferior), which cost 64 ranks on gdbs of 16 a
// tenth of their CPU to the first stop. A rank added to the host takes
// that away first (Host.scope). An inferior that gdb adds by itself (a
// fork followed with detach-on-fork off) is no rank's, and such a
// breakpoint stops it too.

// hostPoint is a breakpoint of gdb's and the ranks it is for.
type hostPoint struct {
	id    int            // gdb's number
	key   string         // how it was set, for the ranks that share it; "" for one rank's own
	args  []string       // the -break-insert arguments, without the condition
	cond  string         // the ranks' condition
	views map[*view]bool // the ranks it is for
	// all: the ranks are every rank of the host (Host.covers), and gdb's
	// breakpoint is not kept to their inferiors.
	all bool
	// fortran: the condition is joined to the ranks' in Fortran's words,
	// gdb's language at the breakpoint's location.
	fortran bool
}

// condition is the hostPoint's condition in gdb: its ranks' inferiors,
// then theirs. gdb parses a condition in the language of the
// breakpoint's location: the inferiors' part reads alike in C, C++ and
// Fortran (== binds more than | in C, and | is a logical or in gdb's
// Fortran); the ranks' own is joined with C's && or Fortran's .and..
func (p *hostPoint) condition() string {
	if p.all {
		return p.cond
	}
	infs := make([]int, 0, len(p.views))
	for v := range p.views {
		infs = append(infs, v.inf)
	}
	slices.Sort(infs)
	terms := make([]string, len(infs))
	for i, n := range infs {
		terms[i] = "$_inferior == " + strconv.Itoa(n)
	}
	scope := strings.Join(terms, " | ")
	and := " && "
	if p.fortran {
		and = " .and. "
	}
	switch {
	case p.cond == "":
		return scope
	case len(terms) > 1:
		return "(" + scope + ")" + and + "(" + p.cond + ")"
	}
	return scope + and + "(" + p.cond + ")"
}

// setCondition gives gdb's breakpoint p the condition cond, read in the
// program of one of p's ranks: gdb 13 reads it in the selected
// inferior's, which may be another rank's (see above) or have no program
// yet ("No symbol table is loaded").
func (h *Host) setCondition(ctx context.Context, p *hostPoint, cond string) (Record, string, error) {
	command := fmt.Sprintf("-break-condition %d %s", p.id, cond)
	if aim := p.aim(); aim != "" {
		command = inject(command, aim)
	}
	return h.g.Run(ctx, command)
}

// insert is the -break-insert that makes gdb's breakpoint for p with the
// condition cond, aimed as aim says.
func (p *hostPoint) insert(cond, aim string) string {
	c := ""
	if cond != "" {
		c = "-c " + Quote(cond) + " "
	}
	return inject("-break-insert "+c+strings.Join(p.args, " "), aim)
}

// aim aims a command about p at one of its ranks: "" when no rank has it.
func (p *hostPoint) aim() string {
	for v := range p.views {
		return v.aimThread()
	}
	return ""
}

// conditioned runs set, which gives gdb p's condition, and again with the
// ranks' condition joined in Fortran's words should gdb not parse it:
// the breakpoint is in Fortran code. The first error stands if both fail.
// (gdb's Fortran may parse C's && too, as & and an address-of, whose
// evaluation fails and stops the program: fortranAt tells those.)
func (p *hostPoint) conditioned(set func(cond string) (Record, string, error)) (Record, string, error) {
	r, text, err := set(p.condition())
	if err == nil || p.cond == "" || p.fortran || !strings.Contains(err.Error(), "syntax error") {
		return r, text, err
	}
	p.fortran = true
	if r, text, err := set(p.condition()); err == nil {
		return r, text, nil
	}
	p.fortran = false
	return r, text, err
}

// notFound is gdb's refusal of a breakpoint's location as a gdb of the
// rank's own gives it. gdb looks for a location in every inferior, and
// says "No symbol table is loaded" where one of them, another rank's, has
// no program yet: the rank's own gdb would not have found the file or
// function.
func (v *view) notFound(err error, args []string) error {
	v.mu.Lock()
	program := v.program
	v.mu.Unlock()
	if !program || !strings.Contains(err.Error(), "No symbol table is loaded") {
		return err
	}
	loc := unquote(lastWord(args))
	if file, line, ok := strings.Cut(loc, ":"); ok {
		if _, aerr := strconv.Atoi(line); aerr == nil {
			return newRefusal("No source file named " + file + ".")
		}
	}
	return newRefusal(fmt.Sprintf("Function %q not defined.", loc))
}

// fortranAt says whether a breakpoint gdb made is in Fortran code, by the
// name of its file (or its first location's), as gdb tells the language
// of a source file.
func fortranAt(point Value) bool {
	file := point.S("file")
	if locs := point.Get("locations").Items(); file == "" && len(locs) > 0 {
		file = locs[0].S("file")
	}
	switch strings.ToLower(filepath.Ext(file)) {
	case ".f", ".for", ".ftn", ".fpp", ".f77", ".f90", ".f95", ".f03", ".f08":
		return true
	}
	return false
}

// shareable says whether a -break-insert may give a breakpoint several
// ranks share: one that is neither temporary, counted, a thread's nor a
// placeholder, at a place that means the same in every rank's program (not
// a bare line or an address, which depend on the selected frame or the
// process).
func shareable(args []string) bool {
	for _, a := range args {
		switch a {
		case "-t", "-i", "-p", "-d", "-a", "--qualified":
			return false
		}
	}
	loc := unquote(lastWord(args))
	if _, err := strconv.Atoi(loc); err == nil || strings.HasPrefix(loc, "*") || loc == "" {
		return false
	}
	return true
}

// breakInsert makes a breakpoint or a watchpoint for the rank.
func (v *view) breakInsert(ctx context.Context, name string, args []string) (Record, string, error) {
	var rest []string
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
			rest = append(rest, "-p", strconv.Itoa(id))
			i++
		default:
			rest = append(rest, args[i])
		}
	}
	if name == "-break-watch" {
		return v.watch(ctx, rest)
	}
	key := ""
	if cond == "" && shareable(rest) {
		key = strings.Join(rest, " ") + "\x00" + cond
	}
	v.h.breaks.Lock()
	defer v.h.breaks.Unlock()
	if p := v.h.shared[key]; key != "" && p != nil {
		return v.join(ctx, p)
	}
	p := &hostPoint{key: key, args: rest, cond: cond, views: map[*view]bool{v: true}}
	v.h.mu.Lock()
	p.all = v.h.covers(p)
	v.h.mu.Unlock()
	r, text, err := p.conditioned(func(cond string) (Record, string, error) {
		return v.h.g.Run(ctx, p.insert(cond, v.context()))
	})
	if err != nil {
		return r, text, v.notFound(err, rest)
	}
	point := r.Results.Get("bkpt")
	p.id = point.Int("number")
	if p.cond != "" && !p.fortran && fortranAt(point) {
		p.fortran = true
		if _, _, err := v.h.setCondition(ctx, p, p.condition()); err != nil {
			v.h.g.Run(ctx, fmt.Sprintf("-break-delete %d", p.id))
			return Record{}, "", err
		}
	}
	v.h.addPoint(p)
	v.number(p.id)
	r.Results = withValue(r.Results, "bkpt", v.shown(point, p))
	return r, text, nil
}

// join adds the view to the ranks of a breakpoint they share; the
// caller holds h.breaks.
func (v *view) join(ctx context.Context, p *hostPoint) (Record, string, error) {
	v.h.setView(p, v, true)
	if err := v.h.recondition(ctx, p); err != nil {
		v.h.setView(p, v, false)
		return Record{}, "", err
	}
	v.number(p.id)
	r, text, err := v.h.g.Run(ctx, fmt.Sprintf("-break-info %d", p.id))
	if err != nil {
		return r, text, err
	}
	body := r.Results.Get("BreakpointTable").Get("body").Items()
	if len(body) == 0 {
		return Record{}, "", fmt.Errorf("gdb lists no breakpoint %d", p.id)
	}
	return done(Field{Name: "bkpt", Value: v.shown(body[0], p)}), text, nil
}

// watch makes a watchpoint for the rank alone.
func (v *view) watch(ctx context.Context, args []string) (Record, string, error) {
	r, text, err := v.h.g.Run(ctx, inject("-break-watch "+strings.Join(args, " "), v.context()))
	if err != nil {
		return r, text, err
	}
	kind := "wpt"
	for _, k := range []string{"hw-rwpt", "hw-awpt"} {
		if r.Results.Has(k) {
			kind = k
		}
	}
	point := r.Results.Get(kind)
	p := &hostPoint{id: point.Int("number"), views: map[*view]bool{v: true}}
	if _, _, err := v.h.setCondition(ctx, p, p.condition()); err != nil {
		v.h.g.Run(ctx, fmt.Sprintf("-break-delete %d", p.id))
		return Record{}, "", err
	}
	v.h.breaks.Lock()
	v.h.addPoint(p)
	v.h.breaks.Unlock()
	v.number(p.id)
	r.Results = withValue(r.Results, kind, v.shown(point, p))
	return r, text, nil
}

// addPoint records a breakpoint of gdb's; h.breaks is held.
func (h *Host) addPoint(p *hostPoint) {
	h.mu.Lock()
	h.points[p.id] = p
	h.mu.Unlock()
	if p.key != "" {
		h.shared[p.key] = p
	}
}

// number gives gdb's breakpoint id the rank's next number.
func (v *view) number(id int) {
	v.mu.Lock()
	v.lastPoint++
	v.points[id], v.numbers[v.lastPoint] = v.lastPoint, id
	v.mu.Unlock()
}

// shown is a breakpoint of gdb's as the rank knows it: its number, its
// location in the rank's program, the rank's condition.
func (v *view) shown(point Value, p *hostPoint) Value {
	v.mu.Lock()
	n := v.points[point.Int("number")]
	v.mu.Unlock()
	point = with(point, "number", strconv.Itoa(n))
	// gdb sets a breakpoint in every inferior's program: the rank's
	// location is the one in its own.
	mine := true
	if locs := point.Get("locations"); locs.Kind == List {
		point, mine = without(point, "locations"), false
		for _, loc := range locs.Items() {
			for _, g := range loc.Get("thread-groups").Items() {
				if g.Str != v.group {
					continue
				}
				mine = true
				for _, f := range loc.Fields {
					if f.Name != "number" && f.Name != "thread-groups" && f.Name != "enabled" {
						point = withValue(point, f.Name, f.Value)
					}
				}
			}
		}
	} else if groups := point.Get("thread-groups"); groups.Kind == List && !point.Has("pending") && strings.Contains(point.S("type"), "breakpoint") {
		mine = slices.ContainsFunc(groups.Items(), func(g Value) bool { return g.Str == v.group })
	}
	if !mine {
		// Found in other ranks' programs only (a library this rank has
		// not loaded yet): for the rank it is pending, and its loads
		// must stop for it (auto dlopen mode).
		for _, f := range []string{"addr", "func", "file", "fullname", "line"} {
			point = without(point, f)
		}
		point = with(point, "pending", point.S("original-location"))
	}
	if p == nil || p.cond == "" {
		point = without(point, "cond")
	} else {
		point = with(point, "cond", p.cond)
	}
	return without(without(point, "thread-groups"), "times")
}

// breakNumbers runs a command on breakpoints by the rank's numbers: no
// numbers, for -break-delete, are all of the rank's. A breakpoint the
// rank shares is left, or made its own, first.
func (v *view) breakNumbers(ctx context.Context, name string, args []string) (Record, string, error) {
	numbers := args
	if name == "-break-after" || name == "-break-condition" {
		numbers = args[:min(1, len(args))]
	}
	var missing []string
	var locals []int
	v.mu.Lock()
	for _, a := range numbers {
		n, err := strconv.Atoi(a)
		if _, ok := v.numbers[n]; err != nil || !ok {
			missing = append(missing, fmt.Sprintf("No breakpoint number %s.\n", a))
			continue
		}
		locals = append(locals, n)
	}
	if name == "-break-delete" && len(args) == 0 {
		for n := range v.numbers {
			locals = append(locals, n)
		}
	}
	v.mu.Unlock()
	if (name == "-break-after" || name == "-break-condition") && len(locals) == 0 {
		return Record{}, "", newRefusal(strings.TrimSpace(strings.Join(missing, "")))
	}
	text := strings.Join(missing, "")
	v.h.breaks.Lock()
	defer v.h.breaks.Unlock()
	var ids []string
	for _, n := range locals {
		if name == "-break-delete" {
			if err := v.leave(ctx, n); err != nil {
				return Record{}, text, err
			}
			continue
		}
		id, err := v.own(ctx, n)
		if err != nil {
			return Record{}, text, err
		}
		ids = append(ids, strconv.Itoa(id))
	}
	switch {
	case name == "-break-condition":
		p := v.h.points[mustAtoi(ids[0])]
		p.cond = strings.Join(args[1:], " ")
		return done(), text, v.h.recondition(ctx, p)
	case name == "-break-after":
		return v.h.g.Run(ctx, name+" "+ids[0]+" "+strings.Join(args[1:], " "))
	case len(ids) == 0:
		return done(), text, nil
	}
	r, out, err := v.h.g.Run(ctx, name+" "+strings.Join(ids, " "))
	return r, text + out, err
}

func mustAtoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}

// leave takes the rank's breakpoint n away from it: gdb's is deleted
// once no rank has it. h.breaks is held.
func (v *view) leave(ctx context.Context, n int) error {
	v.mu.Lock()
	id := v.numbers[n]
	v.mu.Unlock()
	p := v.h.points[id]
	if p != nil && len(p.views) > 1 {
		v.h.setView(p, v, false)
		if err := v.h.recondition(ctx, p); err != nil {
			v.h.setView(p, v, true)
			return err
		}
	} else {
		if _, _, err := v.h.g.Run(ctx, fmt.Sprintf("-break-delete %d", id)); err != nil {
			return err
		}
		v.h.dropPoint(id)
	}
	v.mu.Lock()
	delete(v.numbers, n)
	delete(v.points, id)
	v.mu.Unlock()
	return nil
}

// own makes the rank's breakpoint n its own, if it shares it, and returns
// gdb's number for it. h.breaks is held.
func (v *view) own(ctx context.Context, n int) (int, error) {
	v.mu.Lock()
	id := v.numbers[n]
	v.mu.Unlock()
	p := v.h.points[id]
	if p == nil || len(p.views) < 2 {
		if p != nil && p.key != "" {
			delete(v.h.shared, p.key) // others that set it alike get one of their own
			p.key = ""
		}
		return id, nil
	}
	mine := &hostPoint{args: p.args, cond: p.cond, views: map[*view]bool{v: true}, fortran: p.fortran}
	r, _, err := v.h.g.Run(ctx, mine.insert(mine.condition(), v.context()))
	if err != nil {
		return 0, err
	}
	mine.id = r.Results.Get("bkpt").Int("number")
	v.h.setView(p, v, false)
	if err := v.h.recondition(ctx, p); err != nil {
		return 0, err
	}
	v.h.addPoint(mine)
	v.mu.Lock()
	delete(v.points, id)
	v.points[mine.id], v.numbers[n] = n, mine.id
	v.mu.Unlock()
	return mine.id, nil
}

// recondition gives gdb's breakpoint p the condition of its ranks now.
// h.breaks is held. A pending breakpoint is made again in its place: gdb
// 13 disables one whose condition changed while it was pending once it
// finds its location, should an inferior not have it ("Error in
// re-setting breakpoint"). The ranks keep their numbers for it; stops at
// the old one, already on their way, keep theirs too.
func (h *Host) recondition(ctx context.Context, p *hostPoint) error {
	r, _, err := h.g.Run(ctx, fmt.Sprintf("-break-info %d", p.id))
	if err != nil {
		return err
	}
	body := r.Results.Get("BreakpointTable").Get("body").Items()
	if len(body) == 0 || (!body[0].Has("pending") && body[0].S("addr") != "<PENDING>") || p.args == nil {
		_, _, err := p.conditioned(func(cond string) (Record, string, error) {
			return h.setCondition(ctx, p, cond)
		})
		return err
	}
	aim := p.aim()
	if aim == "" {
		return nil // no rank has it: left deleted
	}
	r, _, err = p.conditioned(func(cond string) (Record, string, error) {
		return h.g.Run(ctx, p.insert(cond, aim))
	})
	if err != nil {
		return err
	}
	old, id := p.id, r.Results.Get("bkpt").Int("number")
	h.mu.Lock()
	p.id = id
	h.points[id] = p
	delete(h.points, old)
	h.mu.Unlock()
	for v := range p.views {
		v.mu.Lock()
		if n, ok := v.points[old]; ok {
			v.points[id], v.numbers[n] = n, id
		}
		v.mu.Unlock()
	}
	_, _, err = h.g.Run(ctx, fmt.Sprintf("-break-delete %d", old))
	return err
}

// setView adds v to the ranks of p, or takes it away; h.breaks is held,
// and h.mu taken, since route reads them. recondition then gives gdb's
// breakpoint the new condition.
func (h *Host) setView(p *hostPoint, v *view, in bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if in {
		p.views[v] = true
	} else {
		delete(p.views, v)
	}
	p.all = h.covers(p)
}

// covers says whether p, a breakpoint the ranks share, is every rank's of
// the host; h.mu is held.
func (h *Host) covers(p *hostPoint) bool {
	if p.key == "" || len(p.views) != len(h.views) {
		return false
	}
	for v := range p.views {
		if h.views[v.inf] != v {
			return false
		}
	}
	return true
}

// scope keeps each breakpoint that is every rank's to the inferiors of
// those ranks, before another rank is added to the host; h.breaks is
// held.
func (h *Host) scope(ctx context.Context) error {
	h.mu.Lock()
	var all []*hostPoint
	for _, p := range h.points {
		if p.all {
			p.all = false
			all = append(all, p)
		}
	}
	h.mu.Unlock()
	for _, p := range all {
		if err := h.recondition(ctx, p); err != nil {
			return err
		}
	}
	return nil
}

// dropPoint forgets a breakpoint of gdb's that is no more.
func (h *Host) dropPoint(id int) *hostPoint {
	h.mu.Lock()
	p := h.points[id]
	delete(h.points, id)
	h.mu.Unlock()
	if p != nil && p.key != "" && h.shared[p.key] == p {
		delete(h.shared, p.key)
	}
	return p
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
		id := f.Value.Int("number")
		v.mu.Lock()
		_, ok := v.points[id]
		v.mu.Unlock()
		if ok {
			v.h.mu.Lock()
			p := v.h.points[id]
			v.h.mu.Unlock()
			f.Value = v.shown(f.Value, p)
			mine = append(mine, f)
		}
	}
	table = withValue(table, "body", Value{Kind: List, Fields: mine})
	r.Results = withValue(r.Results, "BreakpointTable", table)
	return r, out, nil
}
