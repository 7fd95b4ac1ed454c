package dap

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"

	godap "github.com/google/go-dap"

	"github.com/sdm-hpc/sdm/op"
	"github.com/sdm-hpc/sdm/wire"
)

// breakpoints are the client's breakpoints as the ranks' debuggers
// numbered them (the same number on every rank: each is made on all at
// once); DAP's id of a breakpoint is that number.
type breakpoints struct {
	mu        sync.Mutex
	bySource  map[string][]int
	functions []int
	logs      map[int]string // logpoints: their messages
}

// logpoint is the message of logpoint n, if n is one.
func (b *breakpoints) logpoint(n int) (string, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	msg, ok := b.logs[n]
	return msg, ok
}

// replace records numbers as what source (or, "", the function
// breakpoints) holds now, and returns what it held before.
func (b *breakpoints) replace(source string, numbers []int, logs map[int]string) []int {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.bySource == nil {
		b.bySource, b.logs = make(map[string][]int), make(map[int]string)
	}
	var old []int
	if source == "" {
		old, b.functions = b.functions, numbers
	} else {
		old = b.bySource[source]
		b.bySource[source] = numbers
	}
	for _, n := range old {
		delete(b.logs, n)
	}
	for n, msg := range logs {
		b.logs[n] = msg
	}
	return old
}

// setBreakpoints makes a source's breakpoints those the client lists, on
// every rank.
func (a *adapter) setBreakpoints(m *godap.SetBreakpointsRequest) error {
	j, err := a.running()
	if err != nil {
		return err
	}
	path := m.Arguments.Source.Path
	if path == "" {
		return fmt.Errorf("setBreakpoints: the source %q has no path", m.Arguments.Source.Name)
	}
	a.remove(j, a.bps.replace(path, nil, nil))
	var numbers []int
	logs := map[int]string{}
	out := []godap.Breakpoint{}
	for _, sb := range m.Arguments.Breakpoints {
		bp := a.plant(j, fmt.Sprintf("%s:%d", path, sb.Line), sb.Condition, sb.HitCondition)
		bp.Source = &m.Arguments.Source
		if bp.Line == 0 {
			bp.Line = sb.Line
		}
		if bp.Id != 0 {
			numbers = append(numbers, bp.Id)
			if sb.LogMessage != "" {
				logs[bp.Id] = sb.LogMessage
			}
		}
		out = append(out, bp)
	}
	a.bps.replace(path, numbers, logs)
	return a.send(&godap.SetBreakpointsResponse{Response: ok(m.Request), Body: godap.SetBreakpointsResponseBody{Breakpoints: out}})
}

// setFunctionBreakpoints makes the function breakpoints those the client
// lists, on every rank.
func (a *adapter) setFunctionBreakpoints(m *godap.SetFunctionBreakpointsRequest) error {
	j, err := a.running()
	if err != nil {
		return err
	}
	a.remove(j, a.bps.replace("", nil, nil))
	var numbers []int
	out := []godap.Breakpoint{}
	for _, fb := range m.Arguments.Breakpoints {
		bp := a.plant(j, fb.Name, fb.Condition, fb.HitCondition)
		if bp.Id != 0 {
			numbers = append(numbers, bp.Id)
		}
		out = append(out, bp)
	}
	a.bps.replace("", numbers, nil)
	return a.send(&godap.SetFunctionBreakpointsResponse{Response: ok(m.Request), Body: godap.SetFunctionBreakpointsResponseBody{Breakpoints: out}})
}

// remove deletes breakpoints on every rank.
func (a *adapter) remove(j *job, numbers []int) {
	if len(numbers) == 0 {
		return
	}
	groups, err := j.s.Command(a.ctx, j.state.live(), wire.OpDelete, wire.MustEncode(wire.IDs{IDs: numbers}), a.opts.Timeout)
	if err == nil {
		err = wire.Failures(groups, "delete", nil)
	}
	if err != nil {
		a.output("stderr", fmt.Sprintf("sdm: deleting breakpoints %v: %v\n", numbers, err))
	}
}

var hitCount = lazyRegexp(`^\s*(==|>=|>)?\s*(\d+)\s*$`)

// plant makes a breakpoint at location on every live rank: verified when
// every rank planted it, else with a message naming the ranks that could
// not, or that hold it pending (in a library not loaded yet).
func (a *adapter) plant(j *job, location, condition, hit string) godap.Breakpoint {
	b := wire.Break{Location: location, Condition: condition}
	if hit != "" {
		m := hitCount().FindStringSubmatch(hit)
		if m == nil {
			return godap.Breakpoint{Message: fmt.Sprintf("hit condition %q: sdm takes N, == N, >= N or > N (stop from the Nth hit on)", hit)}
		}
		n, _ := strconv.Atoi(m[2])
		if m[1] == ">" {
			n++
		}
		b.Ignore = max(n-1, 0)
	}
	live := j.state.live()
	groups, err := j.s.Command(a.ctx, live, wire.OpBreak, wire.MustEncode(b), a.opts.Timeout)
	if err != nil {
		return godap.Breakpoint{Message: err.Error()}
	}
	var bp godap.Breakpoint
	var failed, pending []string
	planted := wire.RankSet{}
	for _, g := range groups {
		if g.Status != wire.StatusOK {
			failed = append(failed, fmt.Sprintf("%s %v: %s", plural(g.Ranks), g.Ranks, g.Body))
			continue
		}
		answer, err := op.Break.DecodeAnswer(g.Body)
		if err != nil {
			failed = append(failed, fmt.Sprintf("%s %v: %v", plural(g.Ranks), g.Ranks, err))
			continue
		}
		planted = planted.Union(g.Ranks)
		bp.Id = answer.Number
		if answer.Pending {
			pending = append(pending, fmt.Sprintf("pending on %s %v", plural(g.Ranks), g.Ranks))
		} else if bp.Line == 0 {
			bp.Line = lineOf(answer.Location)
		}
	}
	bp.Verified = len(failed) == 0 && len(pending) == 0 && planted.Equal(live)
	bp.Message = strings.Join(append(failed, pending...), "; ")
	return bp
}

// lineOf is the line of a "file:line" location, 0 for none.
func lineOf(location string) int {
	i := strings.LastIndexByte(location, ':')
	if i < 0 {
		return 0
	}
	n, _ := strconv.Atoi(location[i+1:])
	return n
}

var logExpr = lazyRegexp(`\{([^{}]+)\}`)

// splitLogMessage splits a logpoint's message into its text, with %s
// where each {expression} was, and the expressions.
func splitLogMessage(msg string) (string, []string) {
	var exprs []string
	text := logExpr().ReplaceAllStringFunc(strings.ReplaceAll(msg, "%", "%%"), func(m string) string {
		exprs = append(exprs, m[1:len(m)-1])
		return "%s"
	})
	return text, exprs
}

// logLines are a logpoint's lines: one per group of ranks whose values
// agree, the values put in the text.
func logLines(ranks wire.RankSet, text string, exprs []string, groups []wire.Group) []string {
	if len(exprs) == 0 {
		return []string{fmt.Sprintf("[%v] %s\n", ranks, text)}
	}
	var lines []string
	for _, g := range groups {
		values := make([]any, len(exprs))
		for i := range values {
			values[i] = "<" + string(g.Body) + ">"
		}
		if g.Status == wire.StatusOK {
			if vs, err := op.Evaluate.DecodeAnswer(g.Body); err == nil {
				for i := range values {
					if i < len(vs) {
						values[i] = orDefault(vs[i].Value, "<"+vs[i].Error+">")
					}
				}
			}
		}
		lines = append(lines, fmt.Sprintf("[%v] "+text+"\n", append([]any{g.Ranks}, values...)...))
	}
	return lines
}

// lazyRegexp compiles expr at its first use, not at every sdm's start.
func lazyRegexp(expr string) func() *regexp.Regexp {
	return sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(expr) })
}
