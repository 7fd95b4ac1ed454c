// Package op is the table of the ops a rank's debugger runs: for each,
// its name, the type of its body and of its answer, and how the answers
// of many ranks merge on their way up the tree.
//
// What enters: an op's typed body (Def.Body) or its bytes from the wire
// (Def.DecodeBody); what leaves: the bytes that travel (Def.Body,
// Def.Answer) and the typed answer the front end reads (Def.DecodeAnswer).
// Events (news sent up unasked) have entries too (Event, Events): a body
// type and a Fold, how their groups merge on the way up. The tree node
// takes only Merger and Fold from here; each backend implements one
// method per op (package backend); the console has one printer per op and
// per event. Adding an op is one entry here, one method per backend, one
// printer.
//
// # The table
//
// Each entry is a typed Def[B, A]: the op's name (the wire.Op* constant),
// the type of its body B and of its answer A (None where there is none; it
// travels as no bytes), and its merger. The rest of the code reaches an op
// through its entry:
//
//   - The node asks NewMerger(name) for each command and folds the answers
//     of its sources with it; it knows nothing else of the op.
//   - A backend implements backend.Ops, one typed method per op; its Do
//     calls backend.Decode, which decodes the body once, at the edge, into
//     the op's type, and the answer is encoded by the same entry.
//   - The console prints each group with the op's printer
//     (console/printers.go), which decodes the answer with the entry's
//     type.
//   - Tests enumerate the table: the dispatcher has every op but the
//     tree's own (quit), the simulator answers each op or says it leaves
//     it out, gdb's backend has a method for each, the console a printer
//     for each op and for each event it prints (Events).
//
// # Mergers
//
// Most ops use Identical (one group per distinct status and body bytes);
// an op whose answers merge otherwise declares its own Merge. locals, args
// and globals use Vars: each list of variables is cut into one group per
// variable and value (a list of one wire.Var, the empty list for ranks
// without any), so ranks that differ in one variable differ in one group
// only; the groups come in the frame's order (wire.Var.Index, which the
// backend fills), then by lowest rank, and a group from below, one
// variable already, merges as it is, so every level of the tree merges the
// same way. A merger must give equal groups for equal inputs in any order,
// and merge failures by status and reason.
//
// compare's summaries merge with Summaries: counts, sums and sums of
// squares add, the least and most keep the ranks that hold them, the three
// lowest and highest values keep their ranks (the front end tells outliers
// from them), NaN and Inf are rank sets, and the histogram keeps the
// values themselves while there are at most 64, else bins 2^e wide with e
// the least that needs at most 64 (the same whatever order the ranks merge
// in: a part never needs wider bins than the whole). A rank's own answer
// carries no rank (Leaf): the first merger fills in the ranks that gave
// it. So the front end receives one summary of a few hundred bytes for any
// number of ranks.
//
// The queues op merges with QueueClasses (package mpiq says how).
//
// # Events
//
// Each event has an entry in Events (table.go): its name, its body type
// (None; Reason, a sentence that travels as its bytes; or a type of package
// wire) and its fold (Fold), how two of its groups merge on the way up.
// Every event folds identical bodies today (FoldIdentical). The console
// prints each event with the printer of its entry, but connected and
// output-mark, which it takes as news of the tree and of the output's
// order.
//
// # Adding an op
//
// Adding an op, for example info frame (gdb's description of the selected
// frame, as text), touches these files and no others: wire/ops.go (the
// name), op/table.go (the entry), backend/ops.go and backend/unsupported.go
// (the method and its binding; backend/sim takes Unsupported's, so it says
// plainly it has none), backend/gdbmi/ops.go (gdb's method),
// console/printers.go (the printer) and console/commands.go (the command
// that sends it). Nothing in sdm, master or client changes: they carry the
// op by its name and merge it by its entry.
//
//  1. The table (op/table.go), with its name beside the others in
//     wire/ops.go, and FrameInfo.Spec() in Table.
//  2. The method in backend.Ops and its binding in backend/ops.go;
//     backend.Unsupported gets its one-line method too, so that the
//     simulator says it has none.
//  3. gdb's method (backend/gdbmi/ops.go), from the helpers there, and
//     wire.OpFrameInfo: true in needsProcess, since it needs a stopped
//     process.
//  4. The console's printer and command: in console/printers.go, and in
//     console/commands.go.
//
// In code, step by step:
//
//	// 1. wire/ops.go
//	OpFrameInfo = "info-frame" // A: Text, gdb's description of the selected frame
//	// 1. op/table.go
//	FrameInfo = Def[None, wire.Text]{Name: wire.OpFrameInfo}
//
//	// 2. backend.Ops, and its binding in backend/ops.go
//	FrameInfo(ctx context.Context) (wire.Text, error)
//	op.FrameInfo.Name: bare(op.FrameInfo, Ops.FrameInfo),
//
//	// 3. backend/gdbmi/ops.go
//	func (b *Backend) FrameInfo(ctx context.Context) (wire.Text, error) {
//		return b.console(ctx, wire.OpFrameInfo, "info frame")
//	}
//
//	// 4. console/printers.go
//	op.FrameInfo.Name: answer(op.FrameInfo, showText)
//	// 4. console/commands.go
//	{name: "info-frame", usage: "info-frame", help: "gdb's description of the selected frame", run: simple(wire.OpFrameInfo, noArgs)}
//
// The tests that enumerate the table fail until each of these is there.
// The answers merge as any text does; gdb's description holds addresses,
// which differ from rank to rank, so an op meant to merge across ranks
// answers with a type that leaves them out, as frame does.
package op

import (
	"reflect"

	"github.com/sdm-hpc/sdm/wire"
)

// None is the body or the answer of an op that has none. It travels as no
// bytes at all.
type None struct{}

// Def describes an op whose body is a B and whose answer is an A.
type Def[B, A any] struct {
	Name string
	// Merge makes the merger of one command's answers; nil merges
	// identical answers (Identical).
	Merge func() Merger
	// Tree: the tree's nodes answer the op themselves; it never reaches
	// a backend.
	Tree bool
}

// Body encodes a body. A None body is no bytes.
func (d Def[B, A]) Body(b B) []byte {
	if isNone[B]() {
		return nil
	}
	return wire.MustEncode(b)
}

// DecodeBody decodes a body from the wire. No bytes are the zero body: a
// count left out, a setting only asked for.
func (d Def[B, A]) DecodeBody(body []byte) (B, error) {
	var b B
	if len(body) == 0 || isNone[B]() {
		return b, nil
	}
	err := wire.Decode(body, &b)
	return b, err
}

// Answer encodes an answer. A None answer is no bytes.
func (d Def[B, A]) Answer(a A) ([]byte, error) {
	if isNone[A]() {
		return nil, nil
	}
	return wire.Encode(a)
}

// DecodeAnswer decodes one group's answer.
func (d Def[B, A]) DecodeAnswer(body []byte) (A, error) {
	var a A
	if len(body) == 0 || isNone[A]() {
		return a, nil
	}
	err := wire.Decode(body, &a)
	return a, err
}

// Spec is the table's entry for the op, without its types.
func (d Def[B, A]) Spec() Spec {
	return Spec{Name: d.Name, Body: reflect.TypeFor[B](), Answer: reflect.TypeFor[A](), Merge: d.Merge, Tree: d.Tree}
}

func isNone[T any]() bool { return reflect.TypeFor[T]() == reflect.TypeFor[None]() }

// Spec is an op as the table lists it.
type Spec struct {
	Name         string
	Body, Answer reflect.Type // None where there is none
	Merge        func() Merger
	Tree         bool
}

// Lookup returns the table's entry for the op name.
func Lookup(name string) (Spec, bool) {
	s, ok := byName[name]
	return s, ok
}

// NewMerger returns the merger of one command's answers to the op name:
// the op's own, or Identical for an op the table does not hold (one
// private to a backend, such as the simulator's).
func NewMerger(name string) Merger {
	if s, ok := byName[name]; ok && s.Merge != nil {
		return s.Merge()
	}
	return &Identical{}
}

var byName = func() map[string]Spec {
	m := make(map[string]Spec, len(Table))
	for _, s := range Table {
		m[s.Name] = s
	}
	return m
}()
