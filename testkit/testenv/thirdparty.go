package testenv

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// ThirdPartyPrograms are MPI programs that nobody in this project wrote
// (scripts/thirdparty.sh): Open MPI's examples, some of MPICH's tests, and
// HPCC, each built for Open MPI and for MPICH.
type ThirdPartyPrograms struct {
	dir string
	// missing holds, by source package, why it could not be downloaded.
	missing map[string]string
}

// thirdPartyPackage is the source package each program comes from.
var thirdPartyPackage = map[string]string{
	"ring_c": "openmpi", "connectivity_c": "openmpi", "hello_c": "openmpi", "ring_cxx": "openmpi",
	"ring_mpifh": "openmpi", "ring_usempi": "openmpi", "ring_usempif08": "openmpi",
	"isendirecv": "mpich", "opminloc": "mpich", "uallreducef90": "mpich",
	"hpcc": "hpcc",
}

var (
	thirdPartyOnce sync.Once
	thirdParty     *ThirdPartyPrograms
	thirdPartyErr  error
)

// ThirdParty fetches and builds the third-party programs once per test
// binary (a cached build costs nothing) and returns them. It needs both
// MPIs' compiler wrappers, C++ and Fortran; a package that could not be
// downloaded fails only the tests of its programs, saying why.
func ThirdParty(t testing.TB) *ThirdPartyPrograms {
	t.Helper()
	for _, tool := range []string{"gcc", "g++", "gfortran", "mpicc.openmpi", "mpifort.openmpi", "mpicc.mpich", "mpifort.mpich", "tar", "xz"} {
		RequireTool(t, tool)
	}
	thirdPartyOnce.Do(func() {
		thirdParty, thirdPartyErr = buildThirdParty(filepath.Join(repoRoot(), "scripts", "thirdparty.sh"), "")
	})
	if thirdPartyErr != nil {
		t.Fatal(thirdPartyErr)
	}
	return thirdParty
}

// buildThirdParty runs script (in dir, or its default directory when dir
// is empty) and reads what it says.
func buildThirdParty(script, dir string) (*ThirdPartyPrograms, error) {
	args := []string{}
	if dir != "" {
		args = append(args, dir)
	}
	cmd, cancel := CommandTimeout(20*time.Minute, script, args...)
	defer cancel()
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	p := &ThirdPartyPrograms{dir: strings.TrimSpace(out.String()), missing: map[string]string{}}
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee) && ee.ExitCode() == 3:
		// Some packages did not download: their programs' tests say why.
		for _, line := range strings.Split(errOut.String(), "\n") {
			if rest, ok := strings.CutPrefix(line, "missing "); ok {
				pkg, why, _ := strings.Cut(rest, ": ")
				p.missing[pkg] = why
			}
		}
	case err != nil:
		return nil, &buildError{script: script, err: err, out: errOut.String()}
	}
	return p, nil
}

type buildError struct {
	script string
	err    error
	out    string
}

func (e *buildError) Error() string {
	return e.script + ": " + e.err.Error() + "\n" + e.out
}

// Program returns the path of the program name as built for mpi (openmpi
// or mpich). When its source package could not be downloaded, the test
// fails in CI, and is skipped elsewhere, with what the download said.
func (p *ThirdPartyPrograms) Program(t testing.TB, mpi, name string) string {
	t.Helper()
	pkg, ok := thirdPartyPackage[name]
	if !ok {
		t.Fatalf("no third-party program %q", name)
	}
	if why, ok := p.missing[pkg]; ok {
		msg := "the " + pkg + " source package did not download, so " + name + " could not be built: " + why
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	if name == "hpcc" {
		return filepath.Join(p.dir, mpi, "hpcc-1.5.0", "hpcc")
	}
	path := filepath.Join(p.dir, mpi, name)
	if needs, ok := thirdPartyNeeds[name]; ok {
		if _, err := os.Stat(path); err != nil {
			t.Skipf("%s is not built for %s, which lacks %s", name, mpi, needs)
		}
	}
	return path
}

// thirdPartyNeeds are the programs that scripts/thirdparty.sh builds only
// where the MPI has what they need.
var thirdPartyNeeds = map[string]string{
	"ring_cxx": "the MPI C++ bindings (Open MPI 5 dropped them)",
}
