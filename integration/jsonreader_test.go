package integration

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/sdm-hpc/sdm/testkit/testenv"
)

// The reader of --json in docs/ prints, per command, the merged answer of
// a real session: its replies in order, their groups, and the events each
// command caused.
func TestJSONReaderOnARealSession(t *testing.T) {
	testenv.RequireTool(t, "gdb")
	testenv.RequireTool(t, "python3")
	bin := testenv.Examples(t)
	out, stderr, code := run(t, "", "debug", "-n", "4", "--rm", "local", "--json", "--timeout", "60s",
		"-e", "break compute", "-e", "run", "-e", "wait", "-e", "[0-2] print value > 0", "-e", "frobnicate",
		"-e", "[0-2] continue", "-e", "wait", "--", filepath.Join(bin, "plain"))
	if code != 2 {
		t.Fatalf("exit %d, want 2 for the command typed wrong\n%s\n%s", code, out, stderr)
	}
	saved := filepath.Join(t.TempDir(), "session.jsonl")
	if err := os.WriteFile(saved, []byte(out), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := testenv.Command(t, "python3", filepath.Join("..", "docs", "sdm_json.py"), saved)
	var printed, errs bytes.Buffer
	cmd.Stdout, cmd.Stderr = &printed, &errs
	err := cmd.Run()
	text := printed.String()
	if err == nil || errs.Len() != 0 {
		t.Errorf("sdm_json.py: %v (want exit 1: a command failed), stderr %q", err, errs.String())
	}
	for _, want := range []string{
		"#1 break compute  [0-3]  ok\n",
		"#2 run  [0-3]  ok\n",
		"#4 [0-2] print value > 0  [0-2]  ok\n    [0-2] value > 0 = 1\n",
		"#5 frobnicate  []  FAILED\n    error: unknown command \"frobnicate\"",
		"#6 [0-2] continue  [0-2]  ok\n",
		"#7 wait  [0-3]  ok\n",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("no %q in what the reader printed:\n%s", want, text)
		}
	}
	// Every stop names the run that caused it, every exit the run or the
	// continue.
	if !regexp.MustCompile(`(?m)^  \[[0-9,-]+\] stopped: stopped in compute at .*plain\.c:15 \(from #2\)$`).MatchString(text) ||
		!regexp.MustCompile(`(?m)^  \[[0-9,-]+\] exited: exited with code 0 \(from #6\)$`).MatchString(text) {
		t.Errorf("events without their commands:\n%s", text)
	}
}
