package gdbmi

import (
	"testing"

	"github.com/sdm-hpc/sdm/testkit/testenv"
)

// A process with a SIGKILL on its way is as good as gone; one that only
// sleeps is not.
func TestDying(t *testing.T) {
	sleeper := testenv.Command(t, "sleep", "60")
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	if dying(sleeper.Process.Pid) {
		t.Error("a sleeping process is dying")
	}
	if dying(1 << 30) {
		t.Error("a process that does not exist is dying")
	}
}
