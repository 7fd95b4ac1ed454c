package dap

import (
	"testing"

	"github.com/sdm-hpc/sdm/wire"
)

// A rank that moves drops its own frames and variables; the others'
// stay valid, and a dropped number is never given to another frame while
// any handle lives.
func TestForgetDropsOnlyTheRanksThatMoved(t *testing.T) {
	a := &adapter{handles: newHandles()}
	f0, f1 := a.frameID(place{rank: 0}), a.frameID(place{rank: 1, level: 2})
	v0, v1 := a.refID(ref{place: place{rank: 0}}), a.refID(ref{place: place{rank: 1}})
	a.handles.current[1] = 3
	a.forget(wire.Single(0))
	if _, err := a.frame(f0); err == nil {
		t.Error("rank 0 moved, and its frame is still given")
	}
	if _, err := a.ref(v0); err == nil {
		t.Error("rank 0 moved, and its variables are still given")
	}
	if p, err := a.frame(f1); err != nil || p != (place{rank: 1, level: 2}) {
		t.Errorf("rank 1's frame after rank 0 moved: %+v %v", p, err)
	}
	if r, err := a.ref(v1); err != nil || r.rank != 1 {
		t.Errorf("rank 1's variables after rank 0 moved: %+v %v", r, err)
	}
	if f := a.frameID(place{rank: 0}); f == f0 {
		t.Errorf("frame number %d given again while rank 1's live", f)
	}
	a.forget(wire.All(2))
	if _, err := a.frame(f1); err == nil {
		t.Error("every rank moved, and rank 1's frame is still given")
	}
	if len(a.handles.frames) != 0 || len(a.handles.refs) != 0 || len(a.handles.current) != 0 {
		t.Errorf("every handle dropped, yet %d frames, %d variables, %d threads kept", len(a.handles.frames), len(a.handles.refs), len(a.handles.current))
	}
}
