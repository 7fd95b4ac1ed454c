package debugregs_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sdm-hpc/sdm/internal/debugregs"
	"github.com/sdm-hpc/sdm/testkit/testenv"
)

// The probe agrees with gdb: a hardware breakpoint on main stops a
// program exactly where the probe says the debug registers trap.
func TestWorkAgreesWithGDB(t *testing.T) {
	gdb := testenv.RequireTool(t, "gdb")
	cc := testenv.RequireTool(t, "gcc", "cc")
	dir := t.TempDir()
	src := filepath.Join(dir, "p.c")
	if err := os.WriteFile(src, []byte("int main(void) { return 3; }\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	prog := filepath.Join(dir, "p")
	if out, err := testenv.Command(t, cc, "-g", "-o", prog, src).CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", cc, err, out)
	}
	out, err := testenv.Command(t, gdb, "--nx", "-q", "-batch", "-ex", "hbreak main", "-ex", "run", prog).CombinedOutput()
	if err != nil {
		t.Fatalf("gdb: %v\n%s", err, out)
	}
	stopped := strings.Contains(string(out), "main () at")
	ended := strings.Contains(string(out), "exited with code 03")
	if stopped == ended {
		t.Fatalf("gdb neither stopped at its hardware breakpoint nor ran to the end:\n%s", out)
	}
	if got := debugregs.Work(); got != stopped {
		t.Errorf("Work() = %v, but gdb's hardware breakpoint stopped the program: %v\n%s", got, stopped, out)
	}
	t.Logf("debug registers trap here: %v", stopped)
}
