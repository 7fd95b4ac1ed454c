package launcher

import "testing"

func TestRemoteCommand(t *testing.T) {
	cmd := newTarget("me@login", "ssh -p 2222").command([]string{"/bin/sdm", "--x=a b"}, []string{"K=v"})
	if got := cmd[len(cmd)-1]; got != "exec env K=v /bin/sdm '--x=a b'" || cmd[0] != "ssh" || cmd[3] != "-tt" {
		t.Fatalf("remote command: %q", cmd)
	}
}
