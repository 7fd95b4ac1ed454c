package op

import (
	"reflect"

	"github.com/sdm-hpc/sdm/wire"
)

// Fold is how the groups of one event merge on their way up the tree: it
// merges g into into, which holds none of g's ranks, when the two can go
// up as one group, and says whether it did. A node folds an event only
// into a group that no later group of the same ranks follows, so every
// rank's news keeps its order and a rank's repeated news stays repeated;
// the fold itself need not care about order.
type Fold func(into *wire.Group, g wire.Group) bool

// FoldIdentical merges groups of equal status and body bytes. It knows
// nothing of what the bodies mean.
func FoldIdentical(into *wire.Group, g wire.Group) bool {
	if into.Status != g.Status || string(into.Body) != string(g.Body) {
		return false
	}
	into.Ranks = into.Ranks.Union(g.Ranks)
	return true
}

// Reason is the body of an event that is a sentence for the user: it
// travels as its UTF-8 bytes, not as msgpack.
type Reason string

// Event describes an event whose body is a T: news that a rank's backend
// or the tree sends up unasked.
type Event[T any] struct {
	Name string
	// Merge folds the event's groups on the way up; nil merges identical
	// bodies (FoldIdentical).
	Merge Fold
}

// Body encodes a body. A None body is no bytes, a Reason its bytes.
func (e Event[T]) Body(t T) []byte {
	switch v := any(t).(type) {
	case None:
		return nil
	case Reason:
		return []byte(v)
	}
	return wire.MustEncode(t)
}

// DecodeBody decodes one group's body.
func (e Event[T]) DecodeBody(body []byte) (T, error) {
	var t T
	if r, ok := any(&t).(*Reason); ok {
		*r = Reason(body)
		return t, nil
	}
	if len(body) == 0 || isNone[T]() {
		return t, nil
	}
	err := wire.Decode(body, &t)
	return t, err
}

// Spec is the table's entry for the event, without its type.
func (e Event[T]) Spec() EventSpec {
	merge := e.Merge
	if merge == nil {
		merge = FoldIdentical
	}
	return EventSpec{Name: e.Name, Body: reflect.TypeFor[T](), Merge: merge}
}

// EventSpec is an event as the table lists it.
type EventSpec struct {
	Name  string
	Body  reflect.Type // None where there is none
	Merge Fold
}

// LookupEvent returns the table's entry for the event name.
func LookupEvent(name string) (EventSpec, bool) {
	s, ok := eventsByName[name]
	return s, ok
}

// EventFold returns how the groups of the event name merge: the event's
// own fold, or FoldIdentical for one the table does not hold.
func EventFold(name string) Fold {
	if s, ok := eventsByName[name]; ok {
		return s.Merge
	}
	return FoldIdentical
}

var eventsByName = func() map[string]EventSpec {
	m := make(map[string]EventSpec, len(Events))
	for _, s := range Events {
		m[s.Name] = s
	}
	return m
}()
