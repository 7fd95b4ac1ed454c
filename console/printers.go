package console

import (
	"fmt"
	"strings"

	"github.com/sdm-hpc/sdm/internal/text"
	"github.com/sdm-hpc/sdm/op"
	"github.com/sdm-hpc/sdm/wire"
)

// printer turns one group's body, an answer to an op or an event's, into
// a value for JSON and lines of text.
type printer func(body []byte) (any, []string, error)

// answer is the printer of the answers to o, decoded as the op table
// says.
func answer[B, A any](o op.Def[B, A], show func(A) (any, []string)) printer {
	return func(body []byte) (any, []string, error) {
		a, err := o.DecodeAnswer(body)
		v, lines := show(a)
		return v, lines, err
	}
}

// event is the printer of the event e, its body decoded as the table
// says.
func event[T any](e op.Event[T], show func(T) (any, []string)) printer {
	return func(body []byte) (any, []string, error) {
		t, err := e.DecodeBody(body)
		v, lines := show(t)
		return v, lines, err
	}
}

// printers has one printer per op of the table (but quit, which the
// tree answers) and per event (but connected and output-mark, which the
// console takes as news of the tree and of the output's order, and never
// prints).
var printers = map[string]printer{
	op.Start.Name:    answer(op.Start, showState),
	op.Status.Name:   answer(op.Status, showState),
	op.Run.Name:      answer(op.Run, showState),
	op.Continue.Name: answer(op.Continue, showState),
	op.Step.Name:     answer(op.Step, showState),
	op.Next.Name:     answer(op.Next, showState),
	op.Finish.Name:   answer(op.Finish, showState),
	op.Halt.Name:     answer(op.Halt, showState),
	op.Kill.Name:     answer(op.Kill, showState),
	op.Attach.Name:   answer(op.Attach, showAttached),
	op.Detach.Name:   answer(op.Detach, showState),

	op.Break.Name:       answer(op.Break, showBreakpoint),
	op.Delete.Name:      answer(op.Delete, showNone),
	op.Enable.Name:      answer(op.Enable, showNone),
	op.Disable.Name:     answer(op.Disable, showNone),
	op.Condition.Name:   answer(op.Condition, showNone),
	op.Ignore.Name:      answer(op.Ignore, showNone),
	op.Watch.Name:       answer(op.Watch, showBreakpoint),
	op.Breakpoints.Name: answer(op.Breakpoints, showBreakpoints),
	op.BreakNext.Name:   answer(op.BreakNext, showNone),

	op.Where.Name:   answer(op.Where, func(st wire.Stack) (any, []string) { return frames(st.Frames), []string{stackText(st.Frames)} }),
	op.Frame.Name:   answer(op.Frame, func(f wire.Frame) (any, []string) { return frames([]wire.Frame{f})[0], []string{frameText(f)} }),
	op.Depth.Name:   answer(op.Depth, func(n wire.Count) (any, []string) { return n.N, []string{fmt.Sprintf("%d frames", n.N)} }),
	op.Locals.Name:  answer(op.Locals, showVars),
	op.Args.Name:    answer(op.Args, showVars),
	op.Globals.Name: answer(op.Globals, showVars),
	op.Print.Name:   answer(op.Print, showText),
	op.Ptype.Name:   answer(op.Ptype, showText),
	op.Threads.Name: answer(op.Threads, showThreads),
	op.Thread.Name:  answer(op.Thread, func(th wire.Thread) (any, []string) { return th, []string{threadText(th)} }),
	op.MemRead.Name: answer(op.MemRead, func(m wire.Memory) (any, []string) { return m, []string{m.Addr + ": " + m.Hex} }),
	op.MemSet.Name:  answer(op.MemSet, showNone),
	op.Signals.Name: answer(op.Signals, showText),
	op.Handle.Name:  answer(op.Handle, showText),
	op.Raw.Name:     answer(op.Raw, showText),

	op.Backtrace.Name: answer(op.Backtrace, showTrace),
	op.Up.Name:        answer(op.Up, showLevel),
	op.List.Name:      answer(op.List, showText),
	op.Evaluate.Name:  answer(op.Evaluate, showValues),
	op.FrameInfo.Name: answer(op.FrameInfo, showText),
	op.Registers.Name: answer(op.Registers, showText),
	op.Libraries.Name: answer(op.Libraries, showText),
	op.Symbols.Name: answer(op.Symbols, func(s wire.Symbols) (any, []string) {
		return s, []string{fmt.Sprintf("%d functions, %d files", len(s.Functions), len(s.Files))}
	}),

	op.Sample.Name: answer(op.Sample, showCallTree),
	op.Queues.Name: answer(op.Queues, func(q wire.Queues) (any, []string) {
		lines := make([]string, len(q.Ops))
		for i, o := range q.Ops {
			lines[i] = mergedText(o, q.Rank, q.Size) + ": " + waitText(o.Least, o.Waiting)
		}
		return q, lines
	}),
	op.Compare.Name: answer(op.Compare, func(s wire.Summary) (any, []string) {
		return SummaryJSON(s), SummaryText("value", s)
	}),
	op.VarObjs.Name: answer(op.VarObjs, func(vs []wire.VarObj) (any, []string) {
		lines := make([]string, len(vs))
		for i, v := range vs {
			lines[i] = v.Name + " = " + v.Value
		}
		return vs, lines
	}),

	op.Dlopen.Name: answer(op.Dlopen, func(d wire.Dlopen) (any, []string) { return d, dlopenText(d) }),
	op.Plant.Name:  answer(op.Plant, showState),

	op.Lost.Name:     event(op.Lost, showReason(op.Lost.Name)),
	op.Rejoined.Name: event(op.Rejoined, showReason(op.Rejoined.Name)),
	op.Error.Name:    event(op.Error, showReason(op.Error.Name)),
	op.Warning.Name:  event(op.Warning, showReason(op.Warning.Name)),
	op.Running.Name:  event(op.Running, func(op.None) (any, []string) { return nil, []string{"running"} }),
	op.Stopped.Name:  event(op.Stopped, showState),
	op.Exited.Name:   event(op.Exited, showState),
	op.Loaded.Name: event(op.Loaded, func(l wire.Loaded) (any, []string) {
		return l, []string{"loaded " + strings.Join(l.Libraries, ", ")}
	}),
	op.Traced.Name: event(op.Traced, func(t wire.Traced) (any, []string) { return t, []string{tracedText(t)} }),
	op.Output.Name: event(op.Output, func(o wire.Output) (any, []string) {
		// The terminal gets the rank's text without the control bytes it
		// would act on; JSON all of it, escaped.
		return map[string]string{"stream": o.Stream, "text": o.Text}, []string{text.Printable(strings.TrimSuffix(o.Text, "\n"), true)}
	}),
}

// showReason shows the reason of the event name after its name.
func showReason(name string) func(op.Reason) (any, []string) {
	return func(r op.Reason) (any, []string) { return string(r), []string{name + ": " + string(r)} }
}

func showNone(op.None) (any, []string) { return nil, nil }

func showState(st wire.State) (any, []string) { return state(st), stateLines(st) }

func showAttached(a wire.Attached) (any, []string) {
	obj, text := state(a.State), "attached: "+stateText(a.State)
	if a.DLL != "" {
		obj["dll"] = a.DLL
		text += " (MPIR_dll_name " + a.DLL + ")"
	}
	return obj, []string{text}
}

func showBreakpoint(bp wire.Breakpoint) (any, []string) { return bp, []string{breakpointText(bp)} }

func showBreakpoints(list []wire.Breakpoint) (any, []string) {
	if len(list) == 0 {
		return list, []string{"no breakpoints"}
	}
	lines := make([]string, len(list))
	for i, bp := range list {
		lines[i] = breakpointText(bp)
	}
	return list, lines
}

func showVars(vars []wire.Var) (any, []string) {
	if len(vars) == 0 {
		return vars, []string{"none"}
	}
	lines := make([]string, len(vars))
	for i, v := range vars {
		lines[i] = v.Name + " = " + v.Value // as gdb's info locals: the type is in the JSON
	}
	return vars, lines
}

func showThreads(threads []wire.Thread) (any, []string) {
	lines := make([]string, len(threads))
	for i, th := range threads {
		lines[i] = threadText(th)
	}
	return threads, lines
}

// showTrace prints a backtrace as gdb's bt does, without addresses:
// "#1  main (argc=1, argv=0x7ffe…) at plain.c:42", and with bt full each
// frame's locals under it.
func showTrace(tr wire.Trace) (any, []string) {
	var lines []string
	for _, l := range tr.Levels {
		lines = append(lines, levelText(l, true))
		if l.Locals == nil {
			continue
		}
		if len(l.Locals) == 0 {
			lines = append(lines, "        No locals.")
		}
		for _, v := range l.Locals {
			lines = append(lines, "        "+v.Name+" = "+v.Value)
		}
	}
	if tr.More {
		lines = append(lines, "(More stack frames follow...)")
	}
	if len(lines) == 0 {
		lines = []string{"No stack."}
	}
	return tr, lines
}

// showLevel prints the frame up, down or frame selected, and its line.
func showLevel(l wire.Level) (any, []string) {
	lines := []string{levelText(l, false)}
	if l.Source != "" {
		lines = append(lines, fmt.Sprintf("%d\t%s", l.Frame.Line, l.Source))
	}
	return l, lines
}

// levelText is a numbered frame as gdb shows it, with its arguments when
// withArgs (frames without debug information have none to show: "()").
func levelText(l wire.Level, withArgs bool) string {
	f := l.Frame
	text := fmt.Sprintf("#%-2d %s", l.Level, f.Func)
	if withArgs {
		args := make([]string, len(l.Args))
		for i, v := range l.Args {
			args[i] = v.Name + "=" + v.Value
		}
		text += " (" + strings.Join(args, ", ") + ")"
	}
	switch {
	case f.File != "":
		text += fmt.Sprintf(" at %s:%d", f.File, f.Line)
	case f.From != "":
		text += " from " + f.From
	}
	return text
}

func showValues(values []wire.Value) (any, []string) {
	lines := make([]string, len(values))
	for i, v := range values {
		lines[i] = v.Value
		if v.Error != "" {
			lines[i] = v.Error
		}
	}
	return values, lines
}

func showText(t wire.Text) (any, []string) { return t.Text, strings.Split(t.Text, "\n") }

// decode prints body with the printer of op; an op the table does not
// hold (one private to a backend) prints as what its msgpack says.
func decode(op string, body []byte) (any, []string, error) {
	if p, ok := printers[op]; ok {
		return p(body)
	}
	if len(body) == 0 {
		return nil, nil, nil
	}
	var v any
	err := wire.Decode(body, &v)
	return v, []string{fmt.Sprint(v)}, err
}
