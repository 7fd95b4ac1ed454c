// Package testenv finds and builds what the tests need from the machine:
// tools such as gdb and mpirun, and the example programs.
package testenv

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
)

// RequireTool returns the path of the first of names found in $PATH.
// Missing tools skip the test on a developer's machine but fail it in CI
// (CI=true), where .ci/run must have installed them.
func RequireTool(t testing.TB, names ...string) string {
	t.Helper()
	for _, name := range names {
		if path, err := exec.LookPath(name); err == nil {
			return path
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s not found, and CI=true: .ci/run must install it", strings.Join(names, " or "))
	}
	t.Skipf("%s not found", strings.Join(names, " or "))
	return ""
}

var (
	buildOnce sync.Once
	buildDir  string
	buildErr  error
	buildOut  []byte
)

// Examples builds the example programs (make examples) once per test
// binary and returns the directory that holds them. It needs gcc and Open
// MPI's mpicc.
func Examples(t testing.TB) string {
	t.Helper()
	RequireTool(t, "gcc", "cc")
	RequireTool(t, "mpicc.openmpi", "mpicc")
	RequireTool(t, "make")
	buildOnce.Do(func() {
		if buildDir, buildErr = os.MkdirTemp("", "sdm-examples-"); buildErr != nil {
			return
		}
		cmd := exec.Command("make", "-s", "-C", repoRoot(), "examples", "OUT="+buildDir)
		buildOut, buildErr = cmd.CombinedOutput()
	})
	if buildErr != nil {
		t.Fatalf("make examples: %v\n%s", buildErr, buildOut)
	}
	return buildDir
}

// repoRoot is the directory of the project's Makefile, two levels above
// this file.
func repoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}
