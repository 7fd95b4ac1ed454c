package integration

import (
	"strings"
	"testing"

	"github.com/sdm-hpc/sdm/testkit/testenv"
)

// The program gets its arguments as they were given, under gdb as
// without it: gdb starts it through a shell, which must expand nothing.
func TestArgumentsReachTheProgramAsGiven(t *testing.T) {
	testenv.RequireTool(t, "gdb")
	args := []string{"a  b", "$HOME", "*", "it's", `"q"`, `\n`, ""}
	want := "[0] <a  b> <$HOME> <*> <it's> <\"q\"> <\\n> <>\n"
	for _, gdb := range []string{"lazy", "eager"} {
		argv := append([]string{"debug", "-n", "1", "--rm", "local", "--gdb", gdb, "-e", "run", "-e", "wait", "--",
			"/usr/bin/printf", `<%s> <%s> <%s> <%s> <%s> <%s> <%s>\n`}, args...)
		out, stderr, code := run(t, "", argv...)
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("--gdb %s: exit %d, output\n%s%s\nwant %q", gdb, code, out, stderr, want)
		}
	}
}
