package console

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/sdm-hpc/sdm/wire"
)

const restartHelp = `    The job ends first (every rank's server and gdb quit, the launcher exits),
    then starts again as it was started: the same launcher, options, size,
    program, arguments and directory. Breakpoints and watchpoints come back
    under the numbers they had, with their conditions, ignore counts and
    enabled state (temporary ones only if not hit yet); so do each rank's
    dlopen setting, the named rank sets and the focus. The program then runs,
    as gdb's run restarts it: wait for it to stop. Under mpirun, mpiexec, srun
    or poe this is how the job runs again, since run cannot start its ranks
    again alone. A job taken over with sdm attach, or one of sdm listen,
    cannot be started again from here.`

// runRun starts the loaded program. Ranks that a launcher started as one
// job (mpirun, srun) are started once only: run again, gdb would start
// the program outside its job, and it would die in MPI_Init.
func runRun(ctx context.Context, c *Console, ranks wire.RankSet, args string) error {
	if args != "" {
		return usageError("run takes no arguments")
	}
	if c.opts.Restart != nil {
		if launcher := c.opts.Restart.Launcher(); launcher != "" {
			again, err := c.startedBefore(ctx, ranks)
			if err != nil {
				return err
			}
			if !again.Empty() {
				c.Sync(ctx) // how they ended comes first
				c.report(wire.OpRun, again, "refused", fmt.Sprintf("were started by %s as one job: run cannot start them again alone (they would die in MPI_Init); restart relaunches the whole job", launcher))
				return nil
			}
		}
	}
	return c.run(ctx, ranks)
}

// run sends run to ranks, prints the answers that failed, and notes the
// ranks that started.
func (c *Console) run(ctx context.Context, ranks wire.RankSet) error {
	groups, err := c.s.Command(ctx, ranks, wire.OpRun, nil, c.opts.Timeout)
	var started wire.RankSet
	for _, g := range groups {
		if g.Status == wire.StatusOK {
			started = started.Union(g.Ranks)
			c.answered(wire.OpRun, g)
		} else {
			c.printReply(wire.OpRun, "", g)
		}
	}
	c.mu.Lock()
	c.ran = c.ran.Union(started)
	c.mu.Unlock()
	return err
}

// startedBefore returns the ranks of the set that were run since the job
// started, or whose process has ended.
func (c *Console) startedBefore(ctx context.Context, ranks wire.RankSet) (wire.RankSet, error) {
	c.mu.Lock()
	again := c.ran.Intersect(ranks)
	c.mu.Unlock()
	groups, err := c.s.Command(ctx, ranks, wire.OpStatus, nil, c.opts.Timeout)
	if err != nil {
		return again, err
	}
	for _, g := range groups {
		var st wire.State
		if g.Status == wire.StatusOK && wire.Decode(g.Body, &st) == nil && st.State == wire.StateExited {
			again = again.Union(g.Ranks)
		}
	}
	return again, nil
}

// runRestart ends the job and starts it again through its launcher with
// what the user set up: breakpoints, dlopen settings, and, since the
// console stays, the named sets and the focus. It goes to the whole job,
// whatever the rank set.
func runRestart(ctx context.Context, c *Console, _ wire.RankSet, args string) error {
	if args != "" {
		return usageError("restart takes no arguments: it starts the whole job again")
	}
	r := c.opts.Restart
	if r == nil {
		return usageError("restart: this session has no launcher to start its job again")
	}
	if err := r.Restartable(); err != nil {
		return usageError("restart: %v", err)
	}
	c.Sync(ctx)
	all := wire.All(c.s.Size())
	k := c.keep(ctx, all)
	what, err := r.Restart(ctx)
	if err != nil {
		return fmt.Errorf("restart: %w", err)
	}
	c.mu.Lock()
	c.ran = wire.RankSet{}
	c.mu.Unlock()
	c.Sync(ctx) // the old job's last news comes before the new job's
	c.forgetExits()
	planted := c.replay(ctx, k)
	c.restarted(what, all, planted)
	return c.run(ctx, all)
}

// kept is what a restart carries from the old job to the new one.
type kept struct {
	breakpoints []keptBreakpoints
	dlopen      []wire.Group // each rank's dlopen setting (wire.Dlopen)
}

// keptBreakpoints are the breakpoints of some ranks, in number order, and
// the last number their debugger gave, so that new ones go on from there.
type keptBreakpoints struct {
	ranks wire.RankSet
	list  []wire.Breakpoint
	last  int
}

// keep reads what the ranks have set up. What cannot be read is reported
// and left behind.
func (c *Console) keep(ctx context.Context, all wire.RankSet) kept {
	var k kept
	lists, err := c.s.Command(ctx, all, wire.OpBreakList, nil, c.opts.Timeout)
	if err != nil {
		c.report(opRestart, all, "error", "breakpoints not kept: "+err.Error())
	}
	// $bpnum is the number gdb gave last, deleted or not.
	lasts, _ := c.s.Command(ctx, all, wire.OpPrint, wire.MustEncode(wire.Expr{Expr: "$bpnum"}), c.opts.Timeout)
	for _, g := range lists {
		var list []wire.Breakpoint
		if g.Status == wire.StatusOK {
			err = wire.Decode(g.Body, &list)
		} else {
			err = fmt.Errorf("%s: %s", g.Status, g.Body)
		}
		if err != nil {
			c.report(opRestart, g.Ranks, "error", "breakpoints not kept: "+err.Error())
			continue
		}
		sort.Slice(list, func(i, j int) bool { return list[i].Number < list[j].Number })
		highest := 0
		if len(list) > 0 {
			highest = list[len(list)-1].Number
		}
		rest := g.Ranks
		for _, h := range lasts {
			ranks := rest.Intersect(h.Ranks)
			if ranks.Empty() {
				continue
			}
			last := highest
			var v wire.Text
			if h.Status == wire.StatusOK && wire.Decode(h.Body, &v) == nil {
				if n, err := strconv.Atoi(v.Text); err == nil && n > last {
					last = n
				}
			}
			k.breakpoints = append(k.breakpoints, keptBreakpoints{ranks: ranks, list: list, last: last})
			rest = rest.Minus(ranks)
		}
		if !rest.Empty() {
			k.breakpoints = append(k.breakpoints, keptBreakpoints{ranks: rest, list: list, last: highest})
		}
	}
	settings, err := c.s.Command(ctx, all, wire.OpDlopen, nil, c.opts.Timeout)
	if err != nil {
		c.report(opRestart, all, "error", "dlopen settings not kept: "+err.Error())
	}
	for _, g := range settings {
		if g.Status != wire.StatusOK {
			c.report(opRestart, g.Ranks, "error", fmt.Sprintf("dlopen setting not kept: %s: %s", g.Status, g.Body))
			continue
		}
		k.dlopen = append(k.dlopen, g)
	}
	return k
}

// planted is how many breakpoints a restart planted again on some ranks.
type planted struct {
	ranks wire.RankSet
	count int
}

// replay gives the new job what keep read from the old one.
func (c *Console) replay(ctx context.Context, k kept) []planted {
	for _, g := range k.dlopen {
		var d wire.Dlopen
		if wire.Decode(g.Body, &d) != nil {
			continue
		}
		body := wire.MustEncode(wire.Dlopen{Mode: d.Mode, Match: d.Match, SetMatch: true})
		c.try(ctx, g.Ranks, wire.OpDlopen, body, "dlopen "+d.Mode+" not kept")
	}
	var counts []planted
	for _, kb := range k.breakpoints {
		counts = appendPlanted(counts, planted{kb.ranks, c.replant(ctx, kb)})
	}
	return counts
}

// appendPlanted adds p to counts, in the entry of its count if there is one.
func appendPlanted(counts []planted, p planted) []planted {
	for i := range counts {
		if counts[i].count == p.count {
			counts[i].ranks = counts[i].ranks.Union(p.ranks)
			return counts
		}
	}
	return append(counts, p)
}

// replant makes the breakpoints of kb again, in number order, each under
// its old number: a new gdb numbers from 1, so the numbers of those
// deleted before are used up first (OpBreakNext). Doing it in gdb, rather
// than mapping numbers in the front end, keeps every number the user
// sees, in answers, in stops and in raw gdb commands, the one gdb uses.
func (c *Console) replant(ctx context.Context, kb keptBreakpoints) int {
	count := 0
	// The number gdb gives next on every rank of kb, or 0 when unsure, as
	// at first: an attach before main has used one for itself.
	next := 0
	for _, bp := range kb.list {
		what := keptText(bp)
		op, body, ok := remake(bp)
		if !ok {
			c.report(opRestart, kb.ranks, "error", what+" not kept: restart makes breakpoints and watchpoints again, not "+bp.Type+"s")
			next = 0
			continue
		}
		ranks := kb.ranks
		if bp.Number != next {
			ranks = c.try(ctx, ranks, wire.OpBreakNext, wire.MustEncode(wire.Count{N: bp.Number}), what+" could not keep its number")
		}
		made := c.made(ctx, ranks, op, body, bp.Number, what)
		if op == wire.OpWatch && bp.Condition != "" {
			made = c.try(ctx, made, wire.OpCondition, wire.MustEncode(wire.Condition{ID: bp.Number, Expr: bp.Condition}), what+" lost its condition")
		}
		if op == wire.OpWatch && bp.Ignore > 0 {
			made = c.try(ctx, made, wire.OpIgnore, wire.MustEncode(wire.Ignore{ID: bp.Number, Count: bp.Ignore}), what+" lost its ignore count")
		}
		if !bp.Enabled {
			made = c.try(ctx, made, wire.OpDisable, wire.MustEncode(wire.IDs{IDs: []int{bp.Number}}), what+" could not be disabled")
		}
		next = 0
		if made.Equal(kb.ranks) {
			count++
			next = bp.Number + 1
		}
	}
	if kb.last > 0 && kb.last >= next {
		// New breakpoints go on from the old last number, as in the old gdb.
		c.try(ctx, kb.ranks, wire.OpBreakNext, wire.MustEncode(wire.Count{N: kb.last + 1}), fmt.Sprintf("new breakpoints could not be numbered from %d on", kb.last+1))
	}
	return count
}

// made creates a breakpoint on ranks and returns those where it got the
// number it had.
func (c *Console) made(ctx context.Context, ranks wire.RankSet, op string, body []byte, number int, what string) wire.RankSet {
	if ranks.Empty() {
		return ranks
	}
	groups, err := c.s.Command(ctx, ranks, op, body, c.opts.Timeout)
	if err != nil {
		c.report(opRestart, ranks, "error", what+" could not be planted: "+err.Error())
		return wire.RankSet{}
	}
	var made wire.RankSet
	for _, g := range groups {
		var bp wire.Breakpoint
		switch {
		case g.Status != wire.StatusOK:
			c.report(opRestart, g.Ranks, "error", fmt.Sprintf("%s could not be planted: %s: %s", what, g.Status, g.Body))
		case wire.Decode(g.Body, &bp) != nil || bp.Number != number:
			c.report(opRestart, g.Ranks, "error", fmt.Sprintf("%s came back as number %d", what, bp.Number))
		default:
			made = made.Union(g.Ranks)
		}
	}
	return made
}

// try sends op to ranks, reports the ranks where it failed after failure,
// and returns those where it worked.
func (c *Console) try(ctx context.Context, ranks wire.RankSet, op string, body []byte, failure string) wire.RankSet {
	if ranks.Empty() {
		return ranks
	}
	groups, err := c.s.Command(ctx, ranks, op, body, c.opts.Timeout)
	if err != nil {
		c.report(opRestart, ranks, "error", failure+": "+err.Error())
		return wire.RankSet{}
	}
	var ok wire.RankSet
	for _, g := range groups {
		if g.Status == wire.StatusOK {
			ok = ok.Union(g.Ranks)
		} else {
			c.report(opRestart, g.Ranks, "error", fmt.Sprintf("%s: %s: %s", failure, g.Status, g.Body))
		}
	}
	return ok
}

// remake is the command that makes bp again: breakpoints with their
// condition, ignore count and temporariness; watchpoints by their mode
// (their condition and ignore count follow separately).
func remake(bp wire.Breakpoint) (op string, body []byte, ok bool) {
	where := bp.Original
	if where == "" {
		where = bp.Location
	}
	switch {
	case bp.Type == "breakpoint" || bp.Type == "tracepoint":
		return wire.OpBreak, wire.MustEncode(wire.Break{Location: where, Condition: bp.Condition, Temporary: bp.Temporary, Ignore: bp.Ignore,
			Tracepoint: bp.Type == "tracepoint", Trace: bp.Trace}), true
	case strings.HasSuffix(bp.Type, "watchpoint"):
		mode := "write"
		switch {
		case strings.HasPrefix(bp.Type, "read"):
			mode = "read"
		case strings.HasPrefix(bp.Type, "acc"):
			mode = "access"
		}
		return wire.OpWatch, wire.MustEncode(wire.Watch{Expr: bp.Location, Mode: mode}), true
	}
	return "", nil, false
}

// keptText names a breakpoint in what restart says of it.
func keptText(bp wire.Breakpoint) string {
	where := bp.Original
	if where == "" {
		where = bp.Location
	}
	text := fmt.Sprintf("%s %d", bp.Type, bp.Number)
	switch {
	case strings.HasSuffix(bp.Type, "watchpoint"):
		return text + " on " + bp.Location
	case bp.Temporary:
		text = "temporary " + text
	}
	if where != "" {
		text += " at " + where
	}
	return text
}

// restarted says what restart started and what it planted again:
// "restarted: 4 ranks under mpirun; 2 breakpoints planted".
func (c *Console) restarted(what string, all wire.RankSet, counts []planted) {
	if c.opts.JSON {
		list := make([]map[string]any, len(counts))
		for i, p := range counts {
			list[i] = map[string]any{"ranks": p.ranks.String(), "count": p.count}
		}
		c.emit(map[string]any{"note": "restarted", "restarted": what, "ranks": all.String(), "count": all.Count(), "planted": list})
		return
	}
	c.println("restarted: " + what + "; " + plantedText(counts))
}

func plantedText(counts []planted) string {
	if len(counts) == 0 {
		return "no breakpoints kept"
	}
	if len(counts) == 1 {
		switch n := counts[0].count; n {
		case 0:
			return "no breakpoints to plant"
		case 1:
			return "1 breakpoint planted"
		default:
			return strconv.Itoa(n) + " breakpoints planted"
		}
	}
	parts := make([]string, len(counts))
	for i, p := range counts {
		parts[i] = fmt.Sprintf("[%v] %d", p.ranks, p.count)
	}
	return "breakpoints planted: " + strings.Join(parts, ", ")
}

// opRestart names the restart command in JSON replies about it.
const opRestart = "restart"
