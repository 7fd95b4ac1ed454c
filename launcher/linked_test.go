package launcher

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sdm-hpc/sdm/testkit/testenv"
)

// build compiles a one-line C program in dir with compiler and args, and
// returns its path.
func build(t *testing.T, dir, name, compiler string, args ...string) string {
	t.Helper()
	src := filepath.Join(dir, name+".c")
	os.WriteFile(src, []byte("int main(void) { return 0; }\n"), 0o644)
	out := filepath.Join(dir, name)
	cmd := testenv.Command(t, compiler, append([]string{"-o", out, src, "-Wl,--no-as-needed"}, args...)...)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v: %v\n%s", cmd.Args, err, b)
	}
	return out
}

// linkedTo builds a program whose DT_NEEDED names soname: a library of
// that name is made for it, so that any MPI's library names can be tried
// with gcc alone.
func linkedTo(t *testing.T, dir, soname string) string {
	t.Helper()
	lib := filepath.Join(dir, soname)
	src := filepath.Join(dir, "empty.c")
	os.WriteFile(src, []byte("int sdm_empty;\n"), 0o644)
	cmd := testenv.Command(t, "gcc", "-shared", "-fPIC", "-Wl,-soname,"+soname, "-o", lib, src)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v: %v\n%s", cmd.Args, err, b)
	}
	return build(t, dir, "uses-"+strings.ReplaceAll(soname, ".", "_"), "gcc", lib)
}

func TestReadLinkedLibraryNames(t *testing.T) {
	testenv.RequireTool(t, "gcc")
	dir := t.TempDir()
	for _, tc := range []struct{ soname, mpi string }{
		{"libmpi.so.40", "openmpi"},
		{"libmpi_mpifh.so.40", "openmpi"},
		{"libmpi_usempif08.so.40", "openmpi"},
		{"libmpi_usempi_ignore_tkr.so.40", "openmpi"},
		{"libmpi_cxx.so.40", "openmpi"},
		{"libmpich.so.12", "mpich"},
		{"libmpichfort.so.12", "mpich"},
		{"libmpichcxx.so.12", "mpich"},
		{"libmpi.so.12", ""}, // Open MPI 1.10's, or the MPICH ABI's: unknown
		{"libmpix.so.1", ""},
	} {
		prog := linkedTo(t, dir, tc.soname)
		l := ReadLinked(prog, "")
		if l.MPI != tc.mpi {
			t.Errorf("%s: MPI %q (%s), want %q", tc.soname, l.MPI, l.Why(), tc.mpi)
		}
		if tc.mpi != "" && (l.Library != tc.soname || l.Why() != prog+" links "+tc.soname) {
			t.Errorf("%s: library %q, why %q", tc.soname, l.Library, l.Why())
		}
	}
	if l := ReadLinked(linkedTo(t, dir, "libmpi.so.12"), ""); !strings.Contains(l.Why(), "sdm cannot tell") {
		t.Errorf("libmpi.so.12: %q", l.Why())
	}
}

// Programs built by the MPIs' own compilers, and what cannot be read.
func TestReadLinkedPrograms(t *testing.T) {
	testenv.RequireTool(t, "gcc")
	dir := t.TempDir()
	plain := build(t, dir, "plain", "gcc")
	ompi := build(t, dir, "ompi", testenv.RequireTool(t, "mpicc.openmpi", "mpicc"))
	mpich := build(t, dir, "mpich", testenv.RequireTool(t, "mpicc.mpich"))
	script := filepath.Join(dir, "wrapper.sh")
	os.WriteFile(script, []byte("#!/bin/sh\nexec ./ompi \"$@\"\n"), 0o755)
	data := filepath.Join(dir, "data")
	os.WriteFile(data, []byte("not a program\n"), 0o755)
	unrunnable := filepath.Join(dir, "unrunnable")
	os.WriteFile(unrunnable, []byte("\x7fELF"), 0o644)
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))

	for _, tc := range []struct {
		program, dir, mpi, why string
	}{
		{plain, "", "", plain + " links no MPI library"},
		{ompi, "", "openmpi", ompi + " links libmpi.so.40"},
		{"./ompi", dir, "openmpi", "./ompi links libmpi.so.40"}, // relative to the working directory
		{"mpich", "", "mpich", "mpich links libmpich.so.12"},    // a bare name, from $PATH
		{mpich, "", "mpich", mpich + " links libmpich.so.12"},
		{script, "", "", script + " is a script, not an ELF executable: sdm does not look for the program it runs"},
		{data, "", "", data + " is not an ELF executable"},
		{unrunnable, "", "", unrunnable + " cannot be run: is not executable"},
		{"./missing", dir, "", "./missing cannot be run: does not exist"},
		{"no-such-program-here", "", "", "no-such-program-here is not in $PATH"},
	} {
		l := ReadLinked(tc.program, tc.dir)
		if l.MPI != tc.mpi || l.Why() != tc.why {
			t.Errorf("ReadLinked(%s, %q) = %q, %q; want %q, %q", tc.program, tc.dir, l.MPI, l.Why(), tc.mpi, tc.why)
		}
	}
}

func TestDetect(t *testing.T) {
	env := func(kv map[string]string) func(string) (string, bool) {
		return func(k string) (string, bool) { v, ok := kv[k]; return v, ok }
	}
	ompi := Linked{Program: "./ring", MPI: "openmpi", Library: "libmpi.so.40"}
	for _, tc := range []struct {
		env     map[string]string
		program Linked
		want    string
		why     string
	}{
		{map[string]string{"SLURM_JOB_ID": "42"}, ompi, "slurm", "inside SLURM job 42"},
		{map[string]string{"MP_PROCS": "4"}, ompi, "pe", "POE's MP_PROCS is set"},
		{nil, ompi, "openmpi", "./ring links libmpi.so.40"},
		{nil, Linked{Program: "./ring", MPI: "mpich", Library: "libmpich.so.12"}, "mpich", "./ring links libmpich.so.12"},
		{nil, Linked{Program: "./plain"}, "local", "./plain links no MPI library"},
		{nil, Linked{Program: "./run.sh", Note: "is a script"}, "local", "./run.sh is a script"},
	} {
		if got, why := Detect(env(tc.env), tc.program); got != tc.want || why != tc.why {
			t.Errorf("Detect(%v, %v) = %s (%s), want %s (%s)", tc.env, tc.program, got, why, tc.want, tc.why)
		}
	}
}

func TestMismatch(t *testing.T) {
	ompi := Linked{Program: "./ring_c", MPI: "openmpi", Library: "libmpi.so.40"}
	mpi := Linked{Program: "./ring", MPI: "mpich", Library: "libmpich.so.12"}
	for _, tc := range []struct {
		adapter string
		program Linked
		size    int
		want    string
	}{
		{"local", ompi, 4, "./ring_c links Open MPI (libmpi.so.40): under --rm local each rank would be a separate one-rank job; use --rm openmpi (the default, auto, picks it) or --force"},
		{"openmpi", mpi, 4, "./ring links MPICH (libmpich.so.12): under --rm openmpi each rank would be a separate one-rank job; use --rm mpich (the default, auto, picks it) or --force"},
		{"mpich", ompi, 2, "under --rm mpich each rank"},
		{"local", ompi, 1, ""}, // one rank is a job of one
		{"openmpi", ompi, 4, ""},
		{"slurm", mpi, 4, ""}, // srun runs either, with its plugin
		{"local", Linked{Program: "./plain"}, 4, ""},
	} {
		err := mismatch(Adapters[tc.adapter], tc.program, tc.size)
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%s, %s, %d ranks: %v, want %q", tc.adapter, tc.program.Program, tc.size, err, tc.want)
		}
	}
}

// Choose adds the srun plugin a program's MPI needs, unless the user
// named one.
func TestChooseSlurmPlugin(t *testing.T) {
	testenv.RequireTool(t, "gcc")
	dir := t.TempDir()
	ompi := linkedTo(t, dir, "libmpi.so.40")
	mpi := linkedTo(t, dir, "libmpich.so.12")
	plain := build(t, dir, "plain", "gcc")
	t.Setenv("SLURM_JOB_ID", "7")
	for _, tc := range []struct {
		program string
		args    []string
		want    string
	}{
		{ompi, nil, "--mpi=pmix"},
		{mpi, []string{"-p", "debug"}, "--mpi=pmi2 -p debug"},
		{ompi, []string{"--mpi=pmi2"}, "--mpi=pmi2"},
		{ompi, []string{"--mpi", "none"}, "--mpi none"},
		{plain, nil, ""},
	} {
		a, why, args, err := Choose(Options{Program: tc.program, Size: 4, Debugger: "gdb-mi", LauncherArgs: tc.args})
		if err != nil || a.Name() != "slurm" || strings.Join(args, " ") != tc.want {
			t.Errorf("%s %q: %v %s (%s) %q, want slurm %q", tc.program, tc.args, err, a, why, args, tc.want)
		}
	}
	if _, why, _, _ := Choose(Options{Program: ompi, Size: 4, Debugger: "gdb-mi"}); why != "inside SLURM job 7; "+ompi+" links Open MPI: srun --mpi=pmix" {
		t.Errorf("why: %q", why)
	}
}

func TestChooseRefuses(t *testing.T) {
	testenv.RequireTool(t, "gcc")
	t.Setenv("SLURM_JOB_ID", "")
	t.Setenv("MP_PROCS", "")
	dir := t.TempDir()
	ompi := linkedTo(t, dir, "libmpi.so.40")
	for _, tc := range []struct {
		o    Options
		want string
	}{
		{Options{RM: "local", Program: ompi, Size: 4}, "under --rm local each rank would be a separate one-rank job"},
		{Options{Program: ompi, Size: 4, Target: "me@login"}, "--rm auto cannot read the program on me@login"},
		{Options{Program: linkedTo(t, dir, "libmpi.so.12"), Size: 4}, "sdm cannot tell"},
	} {
		_, _, _, err := Choose(tc.o)
		var refused *RefusedError
		if !errors.As(err, &refused) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.o, err, tc.want)
		}
	}
	if a, _, _, err := Choose(Options{RM: "local", Program: ompi, Size: 4, Force: true}); err != nil || a.Name() != "local" {
		t.Errorf("--force: %v %v", a, err)
	}
}
