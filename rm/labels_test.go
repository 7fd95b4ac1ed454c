package rm_test

import (
	"testing"

	"github.com/sdm-hpc/sdm/rm"
	"github.com/sdm-hpc/sdm/rm/openmpi"
	"github.com/sdm-hpc/sdm/rm/slurm"
)

// The labels as mpirun 4.1 --tag-output and srun 22.05 --label write them.
func TestUnlabel(t *testing.T) {
	type want struct {
		rank         int
		stream, text string
		ok           bool
	}
	for _, tc := range []struct {
		l    rm.Labeller
		line string
		want want
	}{
		{openmpi.Adapter{}, "[1,3]<stdout>:hello", want{3, "stdout", "hello", true}},
		{openmpi.Adapter{}, "[17,12]<stderr>:a: b", want{12, "stderr", "a: b", true}},
		{openmpi.Adapter{}, "[1,0]<stdout>:", want{0, "stdout", "", true}},
		{openmpi.Adapter{}, "[vm:01120] OPAL ERROR: Unreachable", want{}},
		{openmpi.Adapter{}, "[1,x]<stdout>:hello", want{}},
		{openmpi.Adapter{}, "hello", want{}},
		{slurm.Adapter{}, "3: hello", want{3, "tty", "hello", true}},
		{slurm.Adapter{}, " 0: a: b", want{0, "tty", "a: b", true}},
		{slurm.Adapter{}, "srun: error: vm: tasks 0-3: Exited", want{}},
		{slurm.Adapter{}, ": hello", want{}},
	} {
		rank, stream, text, ok := tc.l.Unlabel(tc.line)
		if got := (want{rank, stream, text, ok}); got != tc.want && (ok || tc.want.ok) {
			t.Errorf("%T.Unlabel(%q) = %+v, want %+v", tc.l, tc.line, got, tc.want)
		}
	}
}

// The label flag is added once: not when the user asked already.
func TestLabelArgs(t *testing.T) {
	for _, tc := range []struct {
		l    rm.Labeller
		args []string
		want int
	}{
		{openmpi.Adapter{}, []string{"--oversubscribe"}, 1},
		{openmpi.Adapter{}, []string{"--tag-output"}, 0},
		{openmpi.Adapter{}, []string{"-tag-output"}, 0},
		{slurm.Adapter{}, nil, 1},
		{slurm.Adapter{}, []string{"-l"}, 0},
		{slurm.Adapter{}, []string{"--label"}, 0},
	} {
		if got := tc.l.LabelArgs(tc.args); len(got) != tc.want {
			t.Errorf("%T.LabelArgs(%q) = %q", tc.l, tc.args, got)
		}
	}
}
