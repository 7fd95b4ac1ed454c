package procfs

import (
	"bufio"
	"errors"
	"os"
	"os/exec"
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

// A child's environment as it was given, an empty one, and none of a
// process that is not there.
func TestEnviron(t *testing.T) {
	for _, want := range [][]string{{"A=1", "B=two words", "C="}, {}} {
		// cat, once it echoes a line, runs its own program, whose
		// environment /proc shows.
		cmd := exec.Command("cat")
		cmd.Env = want
		in, _ := cmd.StdinPipe()
		out, _ := cmd.StdoutPipe()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		in.Write([]byte("x\n"))
		if _, err := bufio.NewReader(out).ReadString('\n'); err != nil {
			t.Fatal(err)
		}
		got, err := Environ(cmd.Process.Pid)
		in.Close()
		cmd.Wait()
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("environment %q %v, want %q", got, err, want)
		}
	}
	if _, err := Environ(1 << 30); err == nil {
		t.Error("a process that is not there has an environment")
	}
	if _, err := Environ(0); err == nil {
		t.Error("pid 0 has an environment")
	}
}
