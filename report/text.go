package report

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"sort"
	"strings"

	"github.com/sdm-hpc/sdm/console"
	"github.com/sdm-hpc/sdm/wire"
)

// stacks is the value of the stacks command (docs/JSON.md), as far as a
// report shows it.
type stacks struct {
	Roots   []console.TreeNode `json:"roots"`
	Classes []class            `json:"classes"`
}

type class struct {
	Ranks   string `json:"ranks"`
	Count   int    `json:"count"`
	Outlier bool   `json:"outlier"`
	Label   string `json:"label"`
}

// deadlock is the value of the deadlock command, as far as a report
// shows it.
type deadlock struct {
	Lines     []string `json:"lines"`
	Diagnoses []string `json:"diagnoses"`
}

func stacksOf(raw json.RawMessage) stacks {
	var s stacks
	json.Unmarshal(raw, &s)
	return s
}

func deadlockOf(raw json.RawMessage) deadlock {
	var d deadlock
	json.Unmarshal(raw, &d)
	return d
}

// traceOf is a group of where full as frames.
func traceOf(g group) wire.Trace {
	var t wire.Trace
	json.Unmarshal(g.Value, &t)
	return t
}

// summary is the report in a few lines a person reads at once: the
// report's text summary, printed at the end.
func summary(r *Report) []string {
	var l []string
	add := func(format string, args ...any) { l = append(l, fmt.Sprintf(format, args...)) }
	if r.Ranks == 0 {
		add("%s, %.1f s: %s", programName(r.Program), r.Seconds, r.Outcome)
	} else {
		add("%d %s of %s, %.1f s: %s (exit status %d)", r.Ranks, plural(r.Ranks, "rank", "ranks"), programName(r.Program), r.Seconds, r.Outcome, r.Status)
	}
	for _, c := range r.Crashes {
		add("crash at %.1f s: [%s] %s in %s", c.At, c.Ranks, c.Signal, frameText(c.Frame))
		for _, g := range c.Stack {
			if g.Error != "" {
				add("  [%s] where: %s", g.Ranks, g.Error)
				continue
			}
			for _, lv := range traceOf(g).Levels {
				add("  [%s] #%d %s", g.Ranks, lv.Level, levelText(lv))
				if vars := varsText(lv.Locals); vars != "" {
					add("        locals: %s", vars)
				}
			}
		}
		if c.Others != nil {
			l = append(l, classLines("  then ", c.Others)...)
		}
		add("  %s", c.Then)
	}
	for _, h := range r.Hangs {
		add("%s at %.1f s", h.Why, h.At)
		l = append(l, classLines("  ", h)...)
		for _, d := range deadlockOf(h.Deadlock).Diagnoses {
			add("  %s", d)
		}
	}
	for _, s := range r.Shots {
		add("%s at %.1f s", s.Why, s.At)
		l = append(l, classLines("  ", s)...)
	}
	for _, t := range r.Traces {
		head := fmt.Sprintf("tracepoint %s: %d %s", t.Spec, len(t.Hits)+t.Dropped, plural(len(t.Hits)+t.Dropped, "pass", "passes"))
		switch {
		case t.Error != "":
			head = fmt.Sprintf("tracepoint %s: not set: %s", t.Spec, t.Error)
		case t.Pending && len(t.Hits) == 0:
			head += fmt.Sprintf(" (pending: %s was in no code loaded)", t.Location)
		}
		add("%s", head)
		for i, h := range t.Hits {
			if i == 8 {
				add("  … %d more in the report", len(t.Hits)-i)
				break
			}
			add("  [%s] pass %d: %s", h.Ranks, h.Pass, valuesText(h.Values))
		}
	}
	for i, o := range r.Output {
		if i == 8 {
			add("  … %d more groups of ranks' output in the report", len(r.Output)-i)
			break
		}
		if i == 0 {
			add("output, last line:")
		}
		alike := ""
		if o.Alike {
			alike = fmt.Sprintf(" (rank %d's; numbers differ)", o.Shown)
		}
		add("  [%s]%s %s", o.Ranks, alike, o.Lines[len(o.Lines)-1])
	}
	var exits []string
	for _, e := range r.Exits {
		exits = append(exits, fmt.Sprintf("[%s] %s", e.Ranks, e.What))
	}
	if len(exits) > 0 {
		add("ends: %s", strings.Join(exits, "; "))
	}
	return l
}

// classLines are a snapshot's classes, one line each.
func classLines(lead string, s *Shot) []string {
	var l []string
	if s.Error != "" {
		l = append(l, lead+s.Error)
	}
	for _, c := range stacksOf(s.Stacks).Classes {
		l = append(l, fmt.Sprintf("%s[%s] %s", lead, c.Ranks, c.Label))
	}
	return l
}

func levelText(lv wire.Level) string {
	return fmt.Sprintf("%s (%s) %s", lv.Frame.Func, varsText(lv.Args), strings.TrimPrefix(frameText(lv.Frame), lv.Frame.Func+" "))
}

func varsText(vars []wire.Var) string {
	parts := make([]string, len(vars))
	for i, v := range vars {
		parts[i] = v.Name + "=" + v.Value
	}
	return strings.Join(parts, ", ")
}

func valuesText(vals []Value) string {
	parts := make([]string, 0, len(vals))
	for _, v := range vals {
		parts = append(parts, v.Text)
	}
	if len(parts) == 0 {
		return "passed"
	}
	return strings.Join(parts, "; ")
}

func programName(argv []string) string {
	if len(argv) == 0 {
		return "the program"
	}
	if strings.HasPrefix(argv[0], "the job ") {
		return argv[0]
	}
	return filepath.Base(argv[0])
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// exitsOf are the ends, in rank order.
func exitsOf(m map[string]wire.RankSet) []Exit {
	exits := make([]Exit, 0, len(m))
	for what, ranks := range m {
		exits = append(exits, Exit{Ranks: ranks.String(), Count: ranks.Count(), What: what})
	}
	sort.Slice(exits, func(i, j int) bool {
		a, _ := wire.ParseRankSet(exits[i].Ranks)
		b, _ := wire.ParseRankSet(exits[j].Ranks)
		return a.Min() < b.Min()
	})
	return exits
}

func frameOf(n console.TreeNode) wire.Frame {
	return wire.Frame{Func: n.Func, File: n.File, Line: n.Line}
}
