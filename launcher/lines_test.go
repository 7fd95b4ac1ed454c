package launcher

import (
	"testing"

	"github.com/sdm-hpc/sdm/rm/openmpi"
)

// Lines are handed on whole, however the writes cut them, each with the
// rank its label names or -1.
func TestLineWriter(t *testing.T) {
	var got []StarterLine
	w := &lineWriter{unlabel: openmpi.Adapter{}.Unlabel, to: func(l StarterLine) { got = append(got, l) }}
	for _, p := range []string{"[1,2]<stdout>:hel", "lo\nmpirun: note\n[1,0]<std", "err>:x\npartial"} {
		w.Write([]byte(p))
	}
	want := []StarterLine{{2, "stdout", "hello"}, {-1, "", "mpirun: note"}, {0, "stderr", "x"}}
	if len(got) != len(want) {
		t.Fatalf("got %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("line %d: %+v, want %+v", i, got[i], want[i])
		}
	}
}
