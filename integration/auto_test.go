package integration

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/sdm-hpc/sdm/testkit/testenv"
	"github.com/sdm-hpc/sdm/wire"
)

// ringWorld runs ring's n ranks under sdm debug with args, to a
// breakpoint in pass and on to the end, and checks that every rank saw a
// world of n: at the breakpoint and in ring's own last line.
func ringWorld(t *testing.T, env []string, n int, args ...string) (string, string) {
	t.Helper()
	argv := append([]string{"debug", "-n", strconv.Itoa(n), "--timeout", "60s", "-e", "break pass", "-e", "run", "-e", "wait",
		"-e", "print size", "-e", "delete 1", "-e", "continue", "-e", "wait"}, args...)
	out, stderr, code := runWith(t, env, "", argv...)
	all := wire.All(n)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, stderr)
	}
	if got := ranksWith(out, "size = "+strconv.Itoa(n)); !got.Equal(all) {
		t.Errorf("size = %d for ranks %v, want all", n, got)
	}
	if got := ranksWith(out, "ring of "+strconv.Itoa(n)+" ranks done"); !got.Equal(all) {
		t.Errorf("ring of %d ranks done for ranks %v, want all", n, got)
	}
	if t.Failed() {
		t.Logf("output:\n%s\nstderr:\n%s", out, stderr)
	}
	return out, stderr
}

// An MPI program runs under its own MPI's launcher when no --rm is given,
// and sdm says which and why.
func TestAutoPicksTheProgramsMPI(t *testing.T) {
	bin := testenv.Examples(t)
	testenv.RequireTool(t, "gdb")
	t.Run("openmpi", func(t *testing.T) {
		testenv.RequireTool(t, "mpirun.openmpi")
		ring := filepath.Join(bin, "ring")
		_, stderr := ringWorld(t, cleanEnv(), 4, "--launcher-arg=--oversubscribe", "--", ring)
		if want := "sdm: using openmpi (" + ring + " links libmpi.so.40)\n"; !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	})
	t.Run("mpich", func(t *testing.T) {
		testenv.RequireTool(t, "mpiexec.hydra")
		ring := filepath.Join(bin, "ring-mpich")
		_, stderr := ringWorld(t, cleanEnv(), 4, "--", ring)
		if want := "sdm: using mpich (" + ring + " links libmpich.so.12)\n"; !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	})
	// Where /bin is a link to /usr/bin, mpirun found as /bin/mpirun.openmpi
	// and run by that path would take /bin/.. for its --prefix, and fail.
	t.Run("openmpi from /bin", func(t *testing.T) {
		if target, err := os.Readlink("/bin"); err != nil || strings.Trim(target, "/") != "usr/bin" {
			t.Skip("/bin is not a link to /usr/bin here")
		}
		if _, err := os.Stat("/bin/mpirun.openmpi"); err != nil {
			t.Skipf("no /bin/mpirun.openmpi: %v", err)
		}
		var env []string
		for _, kv := range cleanEnv() {
			if !strings.HasPrefix(kv, "PATH=") {
				env = append(env, kv)
			}
		}
		ringWorld(t, append(env, "PATH=/bin:/usr/bin"), 2, "--", filepath.Join(bin, "ring"))
	})
}

// Inside a SLURM allocation sdm runs the job with srun, with the MPI
// plugin the program's MPI needs (the cluster's MpiDefault is none).
func TestAutoInsideSLURMAllocation(t *testing.T) {
	bin := testenv.Examples(t)
	adapter{rm: "slurm"}.prepare(t)
	for _, program := range []string{"ring", "ring-mpich"} {
		t.Run(program, func(t *testing.T) {
			argv := []string{"salloc", "-n", "4", sdmBin, "debug", "-n", "4", "--timeout", "60s", "-e", "run", "-e", "wait", "--", filepath.Join(bin, program)}
			cmd := testenv.Command(t, argv[0], argv[1:]...)
			var out, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &stderr
			if err := cmd.Run(); err != nil {
				t.Fatalf("%v: %v\n%s\n%s", argv, err, out.String(), stderr.String())
			}
			plugin := map[string]string{"ring": "pmix", "ring-mpich": "pmi2"}[program]
			if want := "; " + filepath.Join(bin, program) + " links "; !strings.Contains(stderr.String(), "sdm: using slurm (inside SLURM job ") ||
				!strings.Contains(stderr.String(), want) || !strings.Contains(stderr.String(), ": srun --mpi="+plugin+")\n") {
				t.Errorf("stderr does not say slurm with --mpi=%s:\n%s", plugin, stderr.String())
			}
			if got := ranksWith(out.String(), "ring of 4 ranks done"); !got.Equal(wire.All(4)) {
				t.Errorf("ring of 4 ranks done for ranks %v, want all:\n%s\n%s", got, out.String(), stderr.String())
			}
		})
	}
}

// A launcher of the wrong MPI, forced with --rm, is refused before
// anything starts, with the reason and the fix; --force runs it anyway.
func TestForcedMismatchRefused(t *testing.T) {
	bin := testenv.Examples(t)
	testenv.RequireTool(t, "gdb")
	ring, ringMPICH := filepath.Join(bin, "ring"), filepath.Join(bin, "ring-mpich")
	for _, tc := range []struct {
		rm, program, want string
	}{
		{"local", ring, ring + " links Open MPI (libmpi.so.40): under --rm local each rank would be a separate one-rank job; use --rm openmpi (the default, auto, picks it) or --force"},
		{"openmpi", ringMPICH, ringMPICH + " links MPICH (libmpich.so.12): under --rm openmpi each rank would be a separate one-rank job; use --rm mpich (the default, auto, picks it) or --force"},
		{"mpich", ring, ring + " links Open MPI (libmpi.so.40): under --rm mpich each rank would be a separate one-rank job; use --rm openmpi (the default, auto, picks it) or --force"},
	} {
		mark := marked(t)
		for _, mpir := range [][]string{nil, {"--mpir"}} {
			args := append(append([]string{"debug", "--rm", tc.rm, "-n", "4"}, mpir...), "-e", "run", "--", tc.program)
			out, stderr, code := run(t, "", args...)
			if code != 2 || !strings.Contains(stderr, "sdm: "+tc.want+"\n") || out != "" {
				t.Errorf("%v: exit %d, want 2 and %q\n%s%s", args, code, tc.want, out, stderr)
			}
		}
		noStraysMarked(t, mark)
	}
	out, stderr, code := run(t, "", "debug", "--rm", "local", "--force", "-n", "2", "-e", "run", "-e", "wait", "--", ring)
	if code != 0 || !ranksWith(out, "ring of 1 ranks done").Equal(wire.All(2)) {
		t.Errorf("--force: exit %d\n%s\n%s", code, out, stderr)
	}
}

// Under --mpir auto picks the same way; a launcher without MPIR says
// what to do instead.
func TestAutoUnderMPIRWithoutMPIR(t *testing.T) {
	bin := testenv.Examples(t)
	testenv.RequireTool(t, "gdb")
	testenv.RequireTool(t, "mpiexec.hydra")
	mark := marked(t)
	ring := filepath.Join(bin, "ring-mpich")
	_, stderr, code := run(t, "", "debug", "--mpir", "-n", "2", "--", ring)
	if code != 1 || !strings.Contains(stderr, "sdm: using mpich ("+ring+" links libmpich.so.12)\n") ||
		!strings.Contains(stderr, "is not an MPIR starter") || !strings.Contains(stderr, "attach with sdm attach --starter PID") {
		t.Errorf("MPICH under --mpir: exit %d\n%s", code, stderr)
	}
	plain := filepath.Join(bin, "plain")
	_, stderr, code = run(t, "", "debug", "--mpir", "-n", "2", "--", plain)
	if code != 1 || !strings.Contains(stderr, "sdm: using local ("+plain+" links no MPI library)\n") || !strings.Contains(stderr, "--rm local has no launcher to start the job under MPIR") {
		t.Errorf("no MPI under --mpir: exit %d\n%s", code, stderr)
	}
	noStraysMarked(t, mark)
}
