package launcher

import (
	"strings"
	"testing"
)

func TestCheckRunningWantsOneWayToNameAJob(t *testing.T) {
	for _, c := range []struct {
		m     MPIR
		given Given
		want  string // "" for none
	}{
		{MPIR{Pid: 42}, Given{Pid: true}, ""},
		{MPIR{Procs: []int{43, 44}}, Given{Procs: true}, ""},
		{MPIR{Ancestor: 42}, Given{Ancestor: true}, ""},
		{MPIR{}, Given{}, "--pid PID of the job's starter is needed"},
		{MPIR{Pid: 42, Ancestor: 42}, Given{Pid: true, Ancestor: true}, "exclusive"},
		{MPIR{}, Given{Pid: true}, "a pid is a positive number"},
		{MPIR{Ancestor: -1}, Given{Ancestor: true}, "a pid is a positive number"},
		{MPIR{}, Given{Procs: true}, "--pids needs the ranks' pids"},
		{MPIR{Procs: []int{43, 0}}, Given{Procs: true}, "--pids: 0 is not a pid"},
		{MPIR{Slurm: "12.0"}, Given{Slurm: true}, ""},
		{MPIR{Slurm: "12", Pid: 4}, Given{Slurm: true, Pid: true}, "exclusive"},
		{MPIR{Slurm: "12.x"}, Given{Slurm: true}, `--slurm "12.x": want JOBID or JOBID.STEP`},
	} {
		err := c.m.CheckRunning(c.given)
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%+v given %+v: %v, want %q", c.m, c.given, err, c.want)
		}
	}
}
