package launcher

import (
	"errors"
	"testing"
)

func TestDetect(t *testing.T) {
	env := func(kv map[string]string) func(string) (string, bool) {
		return func(k string) (string, bool) { v, ok := kv[k]; return v, ok }
	}
	none := func(string) (string, error) { return "", errors.New("not found") }
	has := func(want string) func(string) (string, error) {
		return func(p string) (string, error) {
			if p == want {
				return "/usr/bin/" + p, nil
			}
			return "", errors.New("not found")
		}
	}
	for _, tc := range []struct {
		env  map[string]string
		path func(string) (string, error)
		want string
	}{
		{map[string]string{"SLURM_JOB_ID": "42"}, has("mpirun.openmpi"), "slurm"},
		{map[string]string{"MP_PROCS": "4"}, none, "pe"},
		{nil, has("mpirun.openmpi"), "openmpi"},
		{nil, has("mpiexec.hydra"), "mpich"},
		{nil, none, "local"},
	} {
		if got, why := Detect(env(tc.env), tc.path); got != tc.want || why == "" {
			t.Errorf("Detect(%v) = %s (%s), want %s", tc.env, got, why, tc.want)
		}
	}
}

func TestRemoteCommand(t *testing.T) {
	cmd := newTarget("me@login", "ssh -p 2222").command([]string{"/bin/sdm", "--x=a b"}, []string{"K=v"})
	if got := cmd[len(cmd)-1]; got != "exec env K=v /bin/sdm '--x=a b'" || cmd[0] != "ssh" || cmd[3] != "-tt" {
		t.Fatalf("remote command: %q", cmd)
	}
}
