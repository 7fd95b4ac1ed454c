package integration

import (
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/sdm-hpc/sdm/testkit/testenv"
)

// sdm listen --accept-all with a script and no --max debugs one job with
// it and ends when the script does.
func TestListenEndsWithItsScript(t *testing.T) {
	connectDir(t)
	testenv.RequireTool(t, "gdb")
	job, _ := waiting(t, "./plain")
	p := start(t, testenv.Command(t, sdmBin, "listen", "--accept-all", "--timeout", "60s", "-e", "run", "-e", "wait"))
	if code := exitCode(t, p); code != 0 || !strings.Contains(p.out.String(), "exited with code 0") {
		t.Fatalf("listen: exit %d\n%s", code, p.out.String())
	}
	if code := exitCode(t, job); code != 0 {
		t.Errorf("the job: exit %d\n%s", code, job.out.String())
	}
}

// A SIGTERM to sdm listen says what it stopped, and sdm exits as a
// process SIGTERM ended: between sessions, it stops listening; during
// one, it ends the session's job too.
func TestListenSIGTERM(t *testing.T) {
	connectDir(t)
	testenv.RequireTool(t, "gdb")
	check := func(p *proc, says string) {
		t.Helper()
		p.cmd.Process.Signal(syscall.SIGTERM)
		out := p.out.String()
		if code := exitCode(t, p); code != 128+int(syscall.SIGTERM) || !strings.Contains(p.out.String(), says) ||
			strings.Contains(p.out.String(), "does not exist") {
			t.Errorf("exit %d, want 143 and %q:\n%s", code, says, strings.TrimPrefix(p.out.String(), out))
		}
	}

	t.Run("between sessions", func(t *testing.T) {
		waiting(t, "./plain")
		p := start(t, testenv.Command(t, sdmBin, "listen", "--accept-all", "--max", "2", "--timeout", "60s", "-e", "run", "-e", "wait"))
		p.lines(t, 1, "exited with code 0")
		check(p, "sdm: terminated (SIGTERM): stopped listening")
	})

	t.Run("during a session", func(t *testing.T) {
		job, _ := waiting(t, "./hang")
		// Commands come from a pipe that stays open: the session waits
		// for them when the signal comes.
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		cmd := testenv.Command(t, sdmBin, "listen", "--accept-all", "--timeout", "60s")
		cmd.Stdin = r
		p := start(t, cmd)
		r.Close()
		w.Write([]byte("status\n"))
		p.lines(t, 1, "not started")
		check(p, "terminated (SIGTERM): ended the session's job")
		exitCode(t, job)
	})
}
