package lazy

import (
	"slices"
	"testing"

	"github.com/sdm-hpc/sdm/stackwalk"
	"github.com/sdm-hpc/sdm/wire"
)

// A sampled stack leaves out the interposition library's wrapper under
// the MPI call, as gdb's do, and stops after main.
func TestFramesLeaveTheWrapperOut(t *testing.T) {
	got := frames([]stackwalk.Frame{
		{Function: "PMPI_Send", Module: "/lib/x86_64-linux-gnu/libmpi.so.40"},
		{Function: "MPI_Send", Module: "/usr/lib/sdm/libsdmq-openmpi.so"},
		{Function: "main", File: "ring.c", Line: 9},
		{Function: "__libc_start_call_main", Module: "/lib/x86_64-linux-gnu/libc.so.6"},
	})
	want := []wire.Frame{{Func: "PMPI_Send", From: "libmpi.so.40"}, {Func: "main", File: "ring.c", Line: 9}}
	if !slices.Equal(got, want) {
		t.Errorf("frames: %+v, want %+v", got, want)
	}
}
