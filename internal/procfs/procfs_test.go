package procfs

import (
	"errors"
	"os"
	"slices"
	"strconv"
	"testing"
)

// This process, read through /proc: its main thread among its threads,
// running, its pid in its status; a process that is not there.
func TestThisProcess(t *testing.T) {
	pid := os.Getpid()
	tids, err := ThreadIDs(pid)
	if err != nil || !slices.Contains(tids, pid) {
		t.Fatalf("threads %v %v, want this process's main thread among them", tids, err)
	}
	if st := ThreadState(pid, pid); st != "R" && st != "S" {
		t.Errorf("state %q", st)
	}
	if got := StatusField(pid, "Tgid"); got != strconv.Itoa(pid) {
		t.Errorf("Tgid %q, want %d", got, pid)
	}
	const none = 1 << 30 // above any pid_max
	if _, err := ThreadIDs(none); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a process that is not there: %v", err)
	}
	if ThreadState(none, none) != "unknown" || StatusField(none, "Tgid") != "" {
		t.Error("a process that is not there has a state or a status")
	}
}
