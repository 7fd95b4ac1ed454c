package integration

import (
	"fmt"
	"io"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sdm-hpc/sdm/testkit/testenv"
)

// childWith returns the child of pid whose command line holds arg.
func childWith(t *testing.T, pid int, arg string) int {
	t.Helper()
	for _, kid := range children(pid) {
		cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", kid))
		for _, a := range strings.Split(string(cmdline), "\x00") {
			if a == arg {
				return kid
			}
		}
	}
	t.Fatalf("no child of %d has %s among its arguments", pid, arg)
	return 0
}

// running starts sdm debug with args on the simulated ring, its commands
// from the returned pipe, and waits until a first where has answered.
func running(t *testing.T, args ...string) (*proc, io.WriteCloser) {
	t.Helper()
	cmd := testenv.Command(t, sdmBin, append(append([]string{"debug"}, args...), "--debugger", "sim", "--", "ring")...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	p := start(t, cmd)
	io.WriteString(stdin, "where\n")
	p.lines(t, 1, "ring.c")
	return p, stdin
}

// The master's death is one line, cause first ("master killed by
// SIGKILL: ranks 0-15 lost"), not a line for each server that followed
// it, and the next command does not tell it again.
func TestMasterDeathToldOnce(t *testing.T) {
	const n = 16
	p, stdin := running(t, "-n", fmt.Sprint(n), "--rm", "local")
	syscall.Kill(childWith(t, p.cmd.Process.Pid, "--master"), syscall.SIGKILL)
	const told = "master killed by SIGKILL: ranks 0-15 lost"
	p.lines(t, 1, told)
	io.WriteString(stdin, "status\n")
	stdin.Close()
	select {
	case <-p.done:
	case <-time.After(30 * time.Second):
		t.Fatalf("sdm still runs 30 s after its master died:\n%s", p.out.String())
	}
	out := p.out.String()
	if p.err == nil {
		t.Errorf("exit 0 after the master died:\n%s", out)
	}
	if c := strings.Count(out, "ranks 0-15 lost"); c != 1 || strings.Contains(out, "rank 3:") {
		t.Errorf("the loss told %d times, or a line per rank, want once:\n%s", c, out)
	}
}

// quit returns at once when ranks are lost already: they are not waited
// for, and their loss is not told again, only its cause.
func TestQuitAfterALeaderIsKilled(t *testing.T) {
	const n = 4
	p, stdin := running(t, "-n", fmt.Sprint(n), "--rm", "local", "--tree", "hosts")
	syscall.Kill(childWith(t, p.cmd.Process.Pid, "--server=0"), syscall.SIGKILL)
	io.WriteString(stdin, "status\n")
	p.lines(t, 1, "[0-3] lost")
	io.WriteString(stdin, "quit\n")
	stdin.Close()
	// Before, quit waited 10 s for the lost ranks' answer, then the job.
	select {
	case <-p.done:
	case <-time.After(5 * time.Second):
		t.Fatalf("sdm still runs 5 s after quit with every rank lost:\n%s", p.out.String())
	}
	out := p.out.String()
	if strings.Contains(out, "could not quit") || !strings.Contains(out, "rank 0 killed by SIGKILL") {
		t.Errorf("quit after the loss; want the loss's cause and no word of quit:\n%s", out)
	}
	if p.err == nil {
		t.Errorf("exit 0 though every rank was lost:\n%s", out)
	}
}
