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
