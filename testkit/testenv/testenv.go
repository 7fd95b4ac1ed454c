// Package testenv finds and builds what the tests need from the machine:
// tools such as gdb and mpirun, and the example programs.
//
// What enters: a test and the names of tools or programs it needs. What
// leaves: their paths (or the test fails in CI and skips elsewhere), the
// built examples' directory, and commands under the test's deadline that
// are killed with their process group when the test ends.
package testenv

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sdm-hpc/sdm/internal/inherit"
	"github.com/sdm-hpc/sdm/wire"
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
	Missing(t, strings.Join(names, " or "))
	return ""
}

// SelfCopy copies the running test binary where another user (nobody,
// say) may run it: a directory of its own, readable by all, which a
// test's temporary directory is not. The copy is removed when t ends.
func SelfCopy(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "sdm-self-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	bin := filepath.Join(dir, filepath.Base(os.Args[0]))
	data, err := os.ReadFile(os.Args[0])
	if err == nil {
		err = os.WriteFile(bin, data, 0o755)
	}
	if err == nil {
		err = os.Chmod(dir, 0o755)
	}
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

// Missing skips the test for want of what on a developer's machine and
// fails it in CI (CI=true), where .ci/run must have installed it.
func Missing(t testing.TB, what string) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s not found, and CI=true: .ci/run must install it", what)
	}
	t.Skipf("%s not found", what)
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
		cmd, cancel := CommandTimeout(10*time.Minute, "make", "-s", "-C", repoRoot(), "examples", "OUT="+buildDir)
		defer cancel()
		buildOut, buildErr = cmd.CombinedOutput()
	})
	if buildErr != nil {
		t.Fatalf("make examples: %v\n%s", buildErr, buildOut)
	}
	return buildDir
}

// RemoveExamples removes what Examples built, once the tests are done.
func RemoveExamples() {
	if buildDir != "" {
		os.RemoveAll(buildDir)
	}
}

// Main is the TestMain of a package whose tests use Examples: it runs
// them, then removes the examples.
func Main(m *testing.M) {
	CloseInherited()
	code := m.Run()
	RemoveExamples()
	os.Exit(code)
}

// CloseInherited has the descriptors this process was started with,
// beyond the standard three, closed in the programs it starts: the tests'
// sessions start, as from a user's shell, with none, whatever the test
// runner left open (which every rank's program would otherwise get, and a
// shared gdb would start each through the wrapper that hands descriptors
// down).
func CloseInherited() {
	fds, _ := inherit.Of(os.Getpid())
	for _, fd := range fds {
		unix.CloseOnExec(fd)
	}
}

// repoRoot is the directory of the project's Makefile, two levels above
// this file.
func repoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// Describe prints merged answers compactly for test messages and
// comparisons: "[0-6] ok MPI_Recv; [7] lost: why; ".
func Describe(groups []wire.Group) string {
	var b strings.Builder
	for _, g := range groups {
		b.WriteString("[" + g.Ranks.String() + "] " + g.Status.String())
		if g.Status != wire.StatusOK {
			b.WriteString(": " + string(g.Body))
		} else {
			var st wire.Stack
			if wire.Decode(g.Body, &st) == nil && len(st.Frames) > 0 {
				b.WriteString(" " + st.Frames[0].Func)
			}
		}
		b.WriteString("; ")
	}
	return b.String()
}

// OKRanks is the union of the ranks that answered without error.
func OKRanks(groups []wire.Group) wire.RankSet {
	var ok wire.RankSet
	for _, g := range groups {
		if g.Status == wire.StatusOK {
			ok = ok.Union(g.Ranks)
		}
	}
	return ok
}

// Child finds the child of process parent whose command is name.
func Child(t testing.TB, parent int, name string) int {
	t.Helper()
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue
		}
		s := string(stat)
		fields := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
		if strings.Contains(s, "("+name+")") && fields[1] == strconv.Itoa(parent) {
			return pid
		}
	}
	t.Fatalf("process %d has no %s child", parent, name)
	return 0
}

var (
	slurmOnce    sync.Once
	slurmConf    string
	slurmErr     error
	slurmStarted string // the BASE of a cluster these tests started
)

// SLURM makes sure a local SLURM cluster answers (scripts/slurm-local.sh)
// and returns its SLURM_CONF: the one in the environment or the script's
// default one when it answers, else one started for these tests, which
// StopSLURM stops.
func SLURM(t testing.TB) string {
	t.Helper()
	RequireTool(t, "srun")
	RequireTool(t, "slurmctld", "/usr/sbin/slurmctld")
	slurmOnce.Do(func() {
		script := filepath.Join(repoRoot(), "scripts", "slurm-local.sh")
		for _, conf := range []string{os.Getenv("SLURM_CONF"), "/tmp/sdm-slurm/etc/slurm.conf"} {
			sinfo, cancel := CommandTimeout(30*time.Second, "sinfo", "-h")
			defer cancel()
			sinfo.Env = append(os.Environ(), "SLURM_CONF="+conf)
			if conf != "" && sinfo.Run() == nil {
				slurmConf = conf
				return
			}
		}
		base, err := os.MkdirTemp("", "sdm-slurm-")
		if err != nil {
			slurmErr = err
			return
		}
		cmd, cancel := CommandTimeout(2*time.Minute, script, "up")
		defer cancel()
		cmd.Env = append(os.Environ(), "BASE="+base)
		if out, err := cmd.CombinedOutput(); err != nil {
			slurmErr = fmt.Errorf("%s up: %v\n%s", script, err, out)
			return
		}
		slurmConf, slurmStarted = filepath.Join(base, "etc", "slurm.conf"), base
	})
	if slurmErr != nil {
		t.Fatal(slurmErr)
	}
	return slurmConf
}

// StopSLURM stops the cluster SLURM started, if it started one.
func StopSLURM() {
	if slurmStarted == "" {
		return
	}
	cmd, cancel := CommandTimeout(time.Minute, filepath.Join(repoRoot(), "scripts", "slurm-local.sh"), "down")
	defer cancel()
	cmd.Env = append(os.Environ(), "BASE="+slurmStarted)
	cmd.Run()
	os.RemoveAll(slurmStarted)
}
