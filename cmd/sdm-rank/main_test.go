package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sdm-hpc/sdm/internal/testenv"
)

// sdmRank builds sdm-rank alone into a directory of its own, without
// sdm-server beside it.
func sdmRank(t *testing.T) string {
	t.Helper()
	exe := filepath.Join(t.TempDir(), "sdm-rank")
	build := testenv.Command(t, "go", "build", "-o", exe, ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return exe
}

// Each way a start fails says why, with the rank where it has one, and
// exits 1: sdm-server missing for a start that is its, a key file open
// to others, a leader that never listens, within --timeout.
func TestStartFailures(t *testing.T) {
	exe := sdmRank(t)
	dir := t.TempDir()
	file := routes(t, "n1", "n1")
	key := filepath.Join(dir, "key")
	if err := os.WriteFile(key, []byte(strings.Repeat("ab", 32)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	open := filepath.Join(dir, "open")
	if err := os.WriteFile(open, []byte(strings.Repeat("ab", 32)+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--master", "--routing_file=" + file}, "cannot execute " + filepath.Join(filepath.Dir(exe), "sdm-server") + " (the master)"},
		{[]string{"--server=1", "--routing_file=" + file, "--key-file=" + open}, "sdm-rank: rank 1: " + open + ": insecure permissions"},
		{[]string{"--server=1", "--routing_file=" + file, "--key-file=" + key, "--timeout=50ms"}, "sdm-rank: rank 1: could not reach server 0, this host's first, in "},
	} {
		cmd := testenv.Command(t, exe, c.args...)
		out, err := cmd.CombinedOutput()
		if cmd.ProcessState == nil || cmd.ProcessState.ExitCode() != 1 || !strings.Contains(string(out), c.want) {
			t.Errorf("%q: %v, %q; want exit 1 saying %q", c.args, err, out, c.want)
		}
	}
}
