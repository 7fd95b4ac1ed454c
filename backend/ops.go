package backend

import (
	"context"
	"errors"
	"fmt"

	"github.com/sdm-hpc/sdm/op"
	"github.com/sdm-hpc/sdm/wire"
)

// Ops is a debugger's side of the op table: one typed method per op of
// package op that reaches a backend. A backend that leaves ops out embeds
// Unsupported, which answers them with ErrUnsupported.
type Ops interface {
	Start(ctx context.Context, s wire.Start) (wire.State, error)
	Status(ctx context.Context) (wire.State, error)
	Run(ctx context.Context) (wire.State, error)
	Continue(ctx context.Context) (wire.State, error)
	Step(ctx context.Context, n wire.Count) (wire.State, error)
	Next(ctx context.Context, n wire.Count) (wire.State, error)
	Finish(ctx context.Context) (wire.State, error)
	Halt(ctx context.Context) (wire.State, error)
	Kill(ctx context.Context) (wire.State, error)
	Attach(ctx context.Context, a wire.Attach) (wire.Attached, error)
	Detach(ctx context.Context) (wire.State, error)

	Break(ctx context.Context, b wire.Break) (wire.Breakpoint, error)
	Delete(ctx context.Context, ids wire.IDs) error
	Enable(ctx context.Context, ids wire.IDs) error
	Disable(ctx context.Context, ids wire.IDs) error
	Condition(ctx context.Context, c wire.Condition) error
	Ignore(ctx context.Context, i wire.Ignore) error
	Watch(ctx context.Context, w wire.Watch) (wire.Breakpoint, error)
	Breakpoints(ctx context.Context) ([]wire.Breakpoint, error)
	BreakNext(ctx context.Context, n wire.Count) error

	Where(ctx context.Context) (wire.Stack, error)
	Frame(ctx context.Context, level wire.Count) (wire.Frame, error)
	Depth(ctx context.Context) (wire.Count, error)
	Locals(ctx context.Context) ([]wire.Var, error)
	Args(ctx context.Context) ([]wire.Var, error)
	Globals(ctx context.Context) ([]wire.Var, error)
	Print(ctx context.Context, e wire.Expr) (wire.Text, error)
	Ptype(ctx context.Context, e wire.Expr) (wire.Text, error)
	Threads(ctx context.Context) ([]wire.Thread, error)
	Thread(ctx context.Context, id wire.Count) (wire.Thread, error)
	MemRead(ctx context.Context, m wire.Memory) (wire.Memory, error)
	MemSet(ctx context.Context, m wire.Memory) error
	Signals(ctx context.Context) (wire.Text, error)
	Handle(ctx context.Context, t wire.Text) (wire.Text, error)
	Raw(ctx context.Context, t wire.Text) (wire.Text, error)

	Backtrace(ctx context.Context, bt wire.Backtrace) (wire.Trace, error)
	Up(ctx context.Context, n wire.Count) (wire.Level, error)
	List(ctx context.Context, where wire.Text) (wire.Text, error)
	Evaluate(ctx context.Context, e wire.Exprs) ([]wire.Value, error)
	FrameInfo(ctx context.Context) (wire.Text, error)
	Registers(ctx context.Context, names wire.Text) (wire.Text, error)
	Libraries(ctx context.Context) (wire.Text, error)
	Symbols(ctx context.Context) (wire.Symbols, error)
	VarObjs(ctx context.Context, q wire.VarQuery) ([]wire.VarObj, error)
	Sample(ctx context.Context, s wire.Sample) (wire.CallTree, error)
	Queues(ctx context.Context) (wire.Queues, error)

	Dlopen(ctx context.Context, d wire.Dlopen) (wire.Dlopen, error)
	Plant(ctx context.Context) (wire.State, error)
}

// Call is a command decoded into its types, ready to run on a debugger.
type Call func(ctx context.Context, d Ops) ([]byte, error)

// Decode decodes body as the body of op, once, at the edge of the
// backend, and returns the call of the method that runs it. An op the
// table does not hold, or one the tree answers itself, is ErrUnknownOp.
func Decode(op string, body []byte) (Call, error) {
	h, ok := handlers[op]
	if !ok {
		return nil, fmt.Errorf("%w %q", ErrUnknownOp, op)
	}
	return h(body)
}

// handler decodes one op's body into a Call.
type handler func(body []byte) (Call, error)

// handlers binds every op of the table that reaches a backend to its
// method. The bind functions check, when this compiles, that each method
// takes the op's body type and gives its answer type.
var handlers = map[string]handler{
	op.Start.Name:    bind(op.Start, Ops.Start),
	op.Status.Name:   bare(op.Status, Ops.Status),
	op.Run.Name:      bare(op.Run, Ops.Run),
	op.Continue.Name: bare(op.Continue, Ops.Continue),
	op.Step.Name:     bind(op.Step, Ops.Step),
	op.Next.Name:     bind(op.Next, Ops.Next),
	op.Finish.Name:   bare(op.Finish, Ops.Finish),
	op.Halt.Name:     bare(op.Halt, Ops.Halt),
	op.Kill.Name:     bare(op.Kill, Ops.Kill),
	op.Attach.Name:   bind(op.Attach, Ops.Attach),
	op.Detach.Name:   bare(op.Detach, Ops.Detach),

	op.Break.Name:       bind(op.Break, Ops.Break),
	op.Delete.Name:      void(op.Delete, Ops.Delete),
	op.Enable.Name:      void(op.Enable, Ops.Enable),
	op.Disable.Name:     void(op.Disable, Ops.Disable),
	op.Condition.Name:   void(op.Condition, Ops.Condition),
	op.Ignore.Name:      void(op.Ignore, Ops.Ignore),
	op.Watch.Name:       bind(op.Watch, Ops.Watch),
	op.Breakpoints.Name: bare(op.Breakpoints, Ops.Breakpoints),
	op.BreakNext.Name:   void(op.BreakNext, Ops.BreakNext),

	op.Where.Name:   bare(op.Where, Ops.Where),
	op.Frame.Name:   bind(op.Frame, Ops.Frame),
	op.Depth.Name:   bare(op.Depth, Ops.Depth),
	op.Locals.Name:  bare(op.Locals, Ops.Locals),
	op.Args.Name:    bare(op.Args, Ops.Args),
	op.Globals.Name: bare(op.Globals, Ops.Globals),
	op.Print.Name:   bind(op.Print, Ops.Print),
	op.Ptype.Name:   bind(op.Ptype, Ops.Ptype),
	op.Threads.Name: bare(op.Threads, Ops.Threads),
	op.Thread.Name:  bind(op.Thread, Ops.Thread),
	op.MemRead.Name: bind(op.MemRead, Ops.MemRead),
	op.MemSet.Name:  void(op.MemSet, Ops.MemSet),
	op.Signals.Name: bare(op.Signals, Ops.Signals),
	op.Handle.Name:  bind(op.Handle, Ops.Handle),
	op.Raw.Name:     bind(op.Raw, Ops.Raw),

	op.Backtrace.Name: bind(op.Backtrace, Ops.Backtrace),
	op.Up.Name:        bind(op.Up, Ops.Up),
	op.List.Name:      bind(op.List, Ops.List),
	op.Evaluate.Name:  bind(op.Evaluate, Ops.Evaluate),
	op.Compare.Name:   bind(op.Compare, compare),
	op.FrameInfo.Name: bare(op.FrameInfo, Ops.FrameInfo),
	op.Registers.Name: bind(op.Registers, Ops.Registers),
	op.Libraries.Name: bare(op.Libraries, Ops.Libraries),
	op.Symbols.Name:   bare(op.Symbols, Ops.Symbols),
	op.VarObjs.Name:   bind(op.VarObjs, Ops.VarObjs),
	op.Sample.Name:    bind(op.Sample, Ops.Sample),
	op.Queues.Name:    bare(op.Queues, Ops.Queues),

	op.Dlopen.Name: bind(op.Dlopen, Ops.Dlopen),
	op.Plant.Name:  bare(op.Plant, Ops.Plant),
}

// bind is the handler of an op with a body and an answer.
func bind[B, A any](o op.Def[B, A], method func(Ops, context.Context, B) (A, error)) handler {
	return func(body []byte) (Call, error) {
		b, err := o.DecodeBody(body)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", o.Name, err)
		}
		return func(ctx context.Context, d Ops) ([]byte, error) {
			a, err := method(d, ctx, b)
			if err != nil {
				return nil, err
			}
			return o.Answer(a)
		}, nil
	}
}

// bare is the handler of an op without a body.
func bare[A any](o op.Def[op.None, A], method func(Ops, context.Context) (A, error)) handler {
	return bind(o, func(d Ops, ctx context.Context, _ op.None) (A, error) { return method(d, ctx) })
}

// void is the handler of an op without an answer.
func void[B any](o op.Def[B, op.None], method func(Ops, context.Context, B) error) handler {
	return bind(o, func(d Ops, ctx context.Context, b B) (op.None, error) { return op.None{}, method(d, ctx, b) })
}

// ErrUnsupported answers an op that a backend leaves out.
var ErrUnsupported = errors.New("not supported by this backend")
