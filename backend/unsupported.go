package backend

import (
	"context"
	"fmt"

	"github.com/sdm-hpc/sdm/op"
	"github.com/sdm-hpc/sdm/wire"
)

// Unsupported answers every op with ErrUnsupported, naming the op and the
// backend. A backend that leaves ops out embeds it, so that what it leaves
// out is plain in one place: the methods it does not define itself.
type Unsupported struct {
	Backend string // the backend's name, for the answer
}

func (u Unsupported) no(o string) error {
	return fmt.Errorf("%s: %w (%s)", o, ErrUnsupported, u.Backend)
}

// Start implements Ops.
func (u Unsupported) Start(context.Context, wire.Start) (wire.State, error) {
	return wire.State{}, u.no(op.Start.Name)
}

// Status implements Ops.
func (u Unsupported) Status(context.Context) (wire.State, error) {
	return wire.State{}, u.no(op.Status.Name)
}

// Run implements Ops.
func (u Unsupported) Run(context.Context) (wire.State, error) { return wire.State{}, u.no(op.Run.Name) }

// Continue implements Ops.
func (u Unsupported) Continue(context.Context) (wire.State, error) {
	return wire.State{}, u.no(op.Continue.Name)
}

// Step implements Ops.
func (u Unsupported) Step(context.Context, wire.Count) (wire.State, error) {
	return wire.State{}, u.no(op.Step.Name)
}

// Next implements Ops.
func (u Unsupported) Next(context.Context, wire.Count) (wire.State, error) {
	return wire.State{}, u.no(op.Next.Name)
}

// Finish implements Ops.
func (u Unsupported) Finish(context.Context) (wire.State, error) {
	return wire.State{}, u.no(op.Finish.Name)
}

// Halt implements Ops.
func (u Unsupported) Halt(context.Context) (wire.State, error) {
	return wire.State{}, u.no(op.Halt.Name)
}

// Kill implements Ops.
func (u Unsupported) Kill(context.Context) (wire.State, error) {
	return wire.State{}, u.no(op.Kill.Name)
}

// Attach implements Ops.
func (u Unsupported) Attach(context.Context, wire.Attach) (wire.Attached, error) {
	return wire.Attached{}, u.no(op.Attach.Name)
}

// Detach implements Ops.
func (u Unsupported) Detach(context.Context) (wire.State, error) {
	return wire.State{}, u.no(op.Detach.Name)
}

// Break implements Ops.
func (u Unsupported) Break(context.Context, wire.Break) (wire.Breakpoint, error) {
	return wire.Breakpoint{}, u.no(op.Break.Name)
}

// Delete implements Ops.
func (u Unsupported) Delete(context.Context, wire.IDs) error { return u.no(op.Delete.Name) }

// Enable implements Ops.
func (u Unsupported) Enable(context.Context, wire.IDs) error { return u.no(op.Enable.Name) }

// Disable implements Ops.
func (u Unsupported) Disable(context.Context, wire.IDs) error { return u.no(op.Disable.Name) }

// Condition implements Ops.
func (u Unsupported) Condition(context.Context, wire.Condition) error { return u.no(op.Condition.Name) }

// Ignore implements Ops.
func (u Unsupported) Ignore(context.Context, wire.Ignore) error { return u.no(op.Ignore.Name) }

// Watch implements Ops.
func (u Unsupported) Watch(context.Context, wire.Watch) (wire.Breakpoint, error) {
	return wire.Breakpoint{}, u.no(op.Watch.Name)
}

// Breakpoints implements Ops.
func (u Unsupported) Breakpoints(context.Context) ([]wire.Breakpoint, error) {
	return nil, u.no(op.Breakpoints.Name)
}

// BreakNext implements Ops.
func (u Unsupported) BreakNext(context.Context, wire.Count) error { return u.no(op.BreakNext.Name) }

// Where implements Ops.
func (u Unsupported) Where(context.Context) (wire.Stack, error) {
	return wire.Stack{}, u.no(op.Where.Name)
}

// Frame implements Ops.
func (u Unsupported) Frame(context.Context, wire.Count) (wire.Frame, error) {
	return wire.Frame{}, u.no(op.Frame.Name)
}

// Depth implements Ops.
func (u Unsupported) Depth(context.Context) (wire.Count, error) {
	return wire.Count{}, u.no(op.Depth.Name)
}

// Locals implements Ops.
func (u Unsupported) Locals(context.Context) ([]wire.Var, error) { return nil, u.no(op.Locals.Name) }

// Args implements Ops.
func (u Unsupported) Args(context.Context) ([]wire.Var, error) { return nil, u.no(op.Args.Name) }

// Globals implements Ops.
func (u Unsupported) Globals(context.Context) ([]wire.Var, error) { return nil, u.no(op.Globals.Name) }

// Print implements Ops.
func (u Unsupported) Print(context.Context, wire.Expr) (wire.Text, error) {
	return wire.Text{}, u.no(op.Print.Name)
}

// Ptype implements Ops.
func (u Unsupported) Ptype(context.Context, wire.Expr) (wire.Text, error) {
	return wire.Text{}, u.no(op.Ptype.Name)
}

// Threads implements Ops.
func (u Unsupported) Threads(context.Context) ([]wire.Thread, error) {
	return nil, u.no(op.Threads.Name)
}

// Thread implements Ops.
func (u Unsupported) Thread(context.Context, wire.Count) (wire.Thread, error) {
	return wire.Thread{}, u.no(op.Thread.Name)
}

// MemRead implements Ops.
func (u Unsupported) MemRead(context.Context, wire.Memory) (wire.Memory, error) {
	return wire.Memory{}, u.no(op.MemRead.Name)
}

// MemSet implements Ops.
func (u Unsupported) MemSet(context.Context, wire.Memory) error { return u.no(op.MemSet.Name) }

// Signals implements Ops.
func (u Unsupported) Signals(context.Context) (wire.Text, error) {
	return wire.Text{}, u.no(op.Signals.Name)
}

// Handle implements Ops.
func (u Unsupported) Handle(context.Context, wire.Text) (wire.Text, error) {
	return wire.Text{}, u.no(op.Handle.Name)
}

// Raw implements Ops.
func (u Unsupported) Raw(context.Context, wire.Text) (wire.Text, error) {
	return wire.Text{}, u.no(op.Raw.Name)
}

// Backtrace implements Ops.
func (u Unsupported) Backtrace(context.Context, wire.Backtrace) (wire.Trace, error) {
	return wire.Trace{}, u.no(op.Backtrace.Name)
}

// Up implements Ops.
func (u Unsupported) Up(context.Context, wire.Count) (wire.Level, error) {
	return wire.Level{}, u.no(op.Up.Name)
}

// List implements Ops.
func (u Unsupported) List(context.Context, wire.Text) (wire.Text, error) {
	return wire.Text{}, u.no(op.List.Name)
}

// Evaluate implements Ops.
func (u Unsupported) Evaluate(context.Context, wire.Exprs) ([]wire.Value, error) {
	return nil, u.no(op.Evaluate.Name)
}

// FrameInfo implements Ops.
func (u Unsupported) FrameInfo(context.Context) (wire.Text, error) {
	return wire.Text{}, u.no(op.FrameInfo.Name)
}

// Registers implements Ops.
func (u Unsupported) Registers(context.Context, wire.Text) (wire.Text, error) {
	return wire.Text{}, u.no(op.Registers.Name)
}

// VarObjs implements Ops.
func (u Unsupported) VarObjs(context.Context, wire.VarQuery) ([]wire.VarObj, error) {
	return nil, u.no(op.VarObjs.Name)
}

// Symbols implements Ops.
func (u Unsupported) Symbols(context.Context) (wire.Symbols, error) {
	return wire.Symbols{}, u.no(op.Symbols.Name)
}

// Libraries implements Ops.
func (u Unsupported) Libraries(context.Context) (wire.Text, error) {
	return wire.Text{}, u.no(op.Libraries.Name)
}

// Dlopen implements Ops.
func (u Unsupported) Dlopen(context.Context, wire.Dlopen) (wire.Dlopen, error) {
	return wire.Dlopen{}, u.no(op.Dlopen.Name)
}

// Plant implements Ops.
func (u Unsupported) Plant(context.Context) (wire.State, error) {
	return wire.State{}, u.no(op.Plant.Name)
}

var _ Ops = Unsupported{}

// Sample implements Ops.
func (u Unsupported) Sample(context.Context, wire.Sample) (wire.CallTree, error) {
	return wire.CallTree{}, u.no(op.Sample.Name)
}

// Queues implements Ops.
func (u Unsupported) Queues(context.Context) (wire.Queues, error) {
	return wire.Queues{}, u.no(op.Queues.Name)
}
