package testenv

import (
	"debug/elf"
	"path/filepath"
	"strings"
	"testing"
)

// OpenMPIWithMPIR returns Open MPI's mpirun, and skips the test where
// that mpirun has no MPIR: Open MPI 5 (Debian 13) removed it, and its
// ranks are reached through PMIx instead. A missing mpirun fails in CI.
func OpenMPIWithMPIR(t testing.TB) string {
	t.Helper()
	mpirun := RequireTool(t, "mpirun.openmpi", "mpirun")
	if !hasMPIR(t, mpirun) {
		t.Skipf("%s has no MPIR (Open MPI 5): its ranks are reached through PMIx", mpirun)
	}
	return mpirun
}

// OpenMPIHasMPIR says whether Open MPI's mpirun has MPIR (before Open
// MPI 5), for a test that does more than MPIR.
func OpenMPIHasMPIR(t testing.TB) bool {
	t.Helper()
	return hasMPIR(t, RequireTool(t, "mpirun.openmpi", "mpirun"))
}

// hasMPIR says whether mpirun links Open MPI 4's run-time library, where
// MPIR lives; Open MPI 5's mpirun links PRRTE's instead, which has none.
func hasMPIR(t testing.TB, mpirun string) bool {
	t.Helper()
	path, err := filepath.EvalSymlinks(mpirun)
	if err != nil {
		t.Fatal(err)
	}
	f, err := elf.Open(path)
	if err != nil {
		t.Fatalf("%s: %v", mpirun, err)
	}
	defer f.Close()
	libs, err := f.ImportedLibraries()
	if err != nil {
		t.Fatalf("%s: %v", mpirun, err)
	}
	for _, lib := range libs {
		if strings.HasPrefix(lib, "libopen-rte.so") {
			return true
		}
	}
	return false
}
