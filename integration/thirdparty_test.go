package integration

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/sdm-hpc/sdm/testkit/testenv"
	"github.com/sdm-hpc/sdm/wire"
)

// Programs that nobody here wrote (Open MPI's examples, MPICH's test
// suite, HPCC; scripts/thirdparty.sh), debugged as their users run them:
// built for one MPI, started by that MPI's launcher or by srun, four ranks.

// mpiLaunch is a way to run a program of one MPI's build.
type mpiLaunch struct {
	name string
	mpi  string // the build: openmpi or mpich
	rm   string
	args []string
}

var mpiLaunches = []mpiLaunch{
	{"openmpi", "openmpi", "openmpi", []string{"--launcher-arg=--oversubscribe"}},
	{"mpich", "mpich", "mpich", nil},
	{"slurm-openmpi", "openmpi", "slurm", []string{"--launcher-arg=--mpi=pmix"}},
	{"slurm-mpich", "mpich", "slurm", []string{"--launcher-arg=--mpi=pmi2"}},
}

// prepare readies the launcher of r.
func (r mpiLaunch) prepare(t *testing.T) {
	testenv.RequireTool(t, "gdb")
	switch r.rm {
	case "openmpi":
		testenv.RequireTool(t, "mpirun.openmpi")
	case "mpich":
		testenv.RequireTool(t, "mpiexec.hydra")
	case "slurm":
		t.Setenv("SLURM_CONF", testenv.SLURM(t))
	}
}

// debugSession is one sdm debug of a third-party program: the commands,
// and what the output must say.
type debugSession struct {
	name     string
	program  string // in the build's directory, or hpcc
	commands []string
	// want maps a pattern of the text after a line's rank set to the
	// ranks whose lines must match it, all together ("0-3").
	want map[string]string
	// under names the mpiLaunches it runs under: by default the MPIs' own
	// launchers, to keep the suite short.
	under []string
	// wantCode is sdm's exit status: 0 unless the session holds a command
	// that some ranks answer with an error.
	wantCode int
}

// underAll runs a session under every launcher, srun included.
var underAll = []string{"openmpi", "mpich", "slurm-openmpi", "slurm-mpich"}

var thirdPartySessions = []debugSession{{
	// C: a line of the application, next, print merged by value, a break
	// in an MPI function, where, finish, and the ring run to its end.
	name: "ring_c", program: "ring_c", under: underAll,
	commands: []string{"break ring_c.c:27", "run", "wait", "next", "print next", "print size",
		"break MPI_Send", "continue", "[0] wait", "[0] where", "delete 2", "[0] finish",
		"delete 1", "[0] continue", "wait"},
	want: map[string]string{
		`^breakpoint 1 at ring_c\.c:27 in main$`:                   "0-3",
		`^stopped in main at ring_c\.c:27 \(breakpoint 1\)$`:       "0-3",
		`^stopped in main at ring_c\.c:28 \(end-stepping-range\)$`: "0-3",
		`^next = 1$`: "0",
		`^next = 0$`: "3",
		`^size = 4$`: "0-3",
		`^stopped in P?MPI_Send from \S+ \(breakpoint 2\)$`:            "0",
		`^#0  P?MPI_Send \(\) from \S+$`:                               "0",
		`^    #1  main \(argc=1, argv=0x[0-9a-f]+\) at ring_c\.c:39$`:  "",
		`^stopped in main at ring_c\.c:40 `:                            "0",
		`^Process 0 sending 10 to 1, tag 201 \(4 processes in ring\)$`: "0",
		`^Process \d exiting$`:                                         "0-3",
		`^exited with code 0$`:                                         "0-3",
	},
}, {
	name: "ring_cxx", program: "ring_cxx",
	commands: []string{"break ring_cxx.cc:34", "run", "wait", "next", "print next",
		"delete 1", "continue", "wait"},
	want: map[string]string{
		`^stopped in main at ring_cxx\.cc:34 \(breakpoint 1\)$`: "0-3",
		`^next = 2$`:           "1",
		`^exited with code 0$`: "0-3",
	},
}, {
	// C++: locals merge one variable at a time, and a command to ranks
	// that exited says so (the job's exit status is then 1: see
	// wantCode).
	name: "ring_cxx-values", program: "ring_cxx", wantCode: 1,
	commands: []string{"break ring_cxx.cc:40", "run", "wait", "locals", "break nosuch.cc:3",
		"delete 1", "continue", "wait", "where"},
	want: map[string]string{
		`^size = 4$`:  "0-3",
		`^tag = 201$`: "0-3",
		`^next = 2$`:  "1",
		`^rank = 3$`:  "3",
		`^error: no source file named nosuch\.cc in \S+ or its libraries read so far, nor on disk beside its sources: check the name$`: "0-3",
		`^exited with code 0$`: "0-3",
	},
}, {
	// Fortran, the three ways of using MPI. (rank and size are names of
	// Fortran's intrinsics to gdb, which parses print rank as a call.)
	name: "ring_usempif08", program: "ring_usempif08", under: underAll,
	commands: []string{"break ring_usempif08.f90:29", "run", "wait", "print tag", "next", "print next",
		"delete 1", "continue", "wait"},
	want: map[string]string{
		`^stopped in ring at ring_usempif08\.f90:29 \(breakpoint 1\)$`: "0-3",
		`^tag = 201$`: "0-3",
		`^stopped in ring at ring_usempif08\.f90:30 \(end-stepping-range\)$`: "0-3",
		`^next = 3$`:           "2",
		`^exited with code 0$`: "0-3",
	},
}, {
	name: "ring_usempi", program: "ring_usempi",
	commands: []string{"break ring_usempi.f90:25", "run", "wait", "next", "print next", "delete 1", "continue", "wait"},
	want: map[string]string{
		`^stopped in ring at ring_usempi\.f90:25 \(breakpoint 1\)$`: "0-3",
		`^next = 0$`:           "3",
		`^exited with code 0$`: "0-3",
	},
}, {
	name: "ring_mpifh", program: "ring_mpifh",
	commands: []string{"break ring_mpifh.f:26", "run", "wait", "next", "print next", "delete 1", "continue", "wait"},
	want: map[string]string{
		`^stopped in ring_f77 at ring_mpifh\.f:26 \(breakpoint 1\)$`: "0-3",
		`^next = 2$`:           "1",
		`^exited with code 0$`: "0-3",
	},
}, {
	name: "connectivity_c", program: "connectivity_c",
	commands: []string{"run", "wait"},
	want: map[string]string{
		`^Connectivity test on 4 processes PASSED\.$`: "0",
		`^exited with code 0$`:                        "0-3",
	},
}, {
	// MPICH's test suite: a break in MPI_Waitall, the merged stack tree,
	// a frame up, finish back into the test.
	name: "isendirecv", program: "isendirecv", under: underAll,
	commands: []string{"break MPI_Waitall", "run", "wait", "stacks", "frame 1", "frame 0", "finish",
		"print nproc", "print elems", "delete 1", "continue", "wait"},
	want: map[string]string{
		`^stopped in P?MPI_Waitall from \S+ \(breakpoint 1\)$`: "0-3",
		`^main at isendirecv\.c:39 \(4 ranks\)$`:               "0-3",
		`^  \[0-3\] P?MPI_Waitall from \S+ \(4 ranks\)$`:       "",
		`^#1  main at isendirecv\.c:39$`:                       "0-3",
		`^nproc = 4$`:                                          "0-3",
		`^elems = 20$`:                                         "0-3",
		`^stopped in main at isendirecv\.c:41 `:                "0-3",
		`^ No Errors$`:                                         "0",
		`^exited with code 0$`:                                 "0-3",
	},
}, {
	// Arrays of structs, and values that differ by rank.
	name: "opminloc", program: "opminloc",
	commands: []string{"break opminloc.c:55", "run", "wait", "print cinbuf", "print cinbuf[2]", "print coutbuf[0]",
		"print sizeof(cinbuf)", "next", "delete 1", "continue", "wait"},
	want: map[string]string{
		`^cinbuf = \{\{val = 1, loc = 0\}, \{val = 0, loc = 0\}, \{val = 0, loc = 0\}\}$`: "0",
		`^cinbuf = \{\{val = 1, loc = 3\}, \{val = 0, loc = 3\}, \{val = 3, loc = 3\}\}$`: "3",
		`^cinbuf\[2\] = \{val = 2, loc = 2\}$`:                                            "2",
		`^coutbuf\[0\] = \{val = 0, loc = -1\}$`:                                          "0-3",
		`^sizeof\(cinbuf\) = 24$`:                                                         "0-3",
		`^stopped in main at opminloc\.c:56 \(end-stepping-range\)$`:                      "0-3",
		`^exited with code 0$`:                                                            "0-3",
	},
}, {
	// Fortran arrays around MPI_Allreduce with a user-defined operation,
	// and a break in that operation, which MPI calls.
	name: "uallreducef90", program: "uallreducef90",
	commands: []string{"break uallreducef90.f90:45 if count == 4", "run", "wait", "print vin(1:4)", "print vout(1:2)",
		"next", "print vout(1:4)", "break uop", "continue", "wait", "print count", "print cin(2)", "finish",
		"delete 1 2", "continue", "wait"},
	want: map[string]string{
		`^stopped in MAIN__ at uallreducef90\.f90:46 \(breakpoint 1\)$`:       "0-3",
		`^vin\(1:4\) = \(1, 2, 3, 4\)$`:                                       "0-3",
		`^vout\(1:2\) = \(-1, -1\)$`:                                          "0-3",
		`^stopped in MAIN__ at uallreducef90\.f90:48 \(end-stepping-range\)$`: "0-3",
		`^vout\(1:4\) = \(4, 8, 12, 16\)$`:                                    "0-3",
		`^stopped in uop at uallreducef90\.f90:\d+ \(breakpoint 2\)$`:         "0-3",
		`^count = 8$`:          "0-3",
		`^exited with code 0$`: "0-3",
	},
}, {
	// HPCC: a break in MPI_Allreduce, the stack tree through HPCC's own
	// functions, finish, then its parameters once its input is read; the
	// job is killed there, since HPCC's benchmarks spin in MPI for long
	// when four ranks share two cores under MPICH or srun.
	name: "hpcc-init", program: "hpcc", under: underAll,
	commands: []string{"break MPI_Allreduce", "run", "wait", "stacks", "finish", "delete 1",
		"break HPCC_InitHPL", "continue", "wait", "finish", "print params->nval[0]", "print params->nbval[0]@1",
		"print params->pval[0] * params->qval[0]", "kill"},
	want: map[string]string{
		`^stopped in P?MPI_Allreduce from \S+ \(breakpoint 1\)$`:           "0-3",
		`^main at \S*src/hpcc\.c:\d+ \(4 ranks\)$`:                         "0-3",
		`^  \[0-3\] HPCC_Init at \S*src/io\.c:\d+ \(4 ranks\)$`:            "",
		`^stopped in ErrorReduce at \S*src/io\.c:\d+ `:                     "0-3",
		`^stopped in HPCC_InitHPL at \S*src/io\.c:\d+ \(breakpoint 2\)$`:   "0-3",
		`^stopped in HPCC_Init at \S*src/io\.c:\d+ \(function-finished\)$`: "0-3",
		`^ +Value returned is 0$`:                                          "",
		`^params->nval\[0\] = 200$`:                                        "0-3",
		`^params->nbval\[0\]@1 = \{20\}$`:                                  "0-3",
		`^params->pval\[0\] \* params->qval\[0\] = 4$`:                     "0-3",
		`^exited \(killed\)$`:                                              "0-3",
	},
}, {
	// HPCC run through all its benchmarks to HPL's solver: its structures,
	// and the end.
	name: "hpcc", program: "hpcc", under: []string{"openmpi"},
	commands: []string{"break HPL_pdgesv", "run", "wait", "print GRID->myrow", "print *GRID", "print A->n",
		"delete 1", "continue", "wait"},
	want: map[string]string{
		`^stopped in HPL_pdgesv at \S*src/pgesv/HPL_pdgesv\.c:\d+ \(breakpoint 1\)$`: "0-3",
		`^GRID->myrow = 0$`: "0-1",
		`^GRID->myrow = 1$`: "2-3",
		`^\*GRID = \{.*iam = 2, myrow = 1, mycol = 0, nprow = 2, npcol = 2, nprocs = 4,`: "2",
		`^A->n = 200$`:         "0-3",
		`^exited with code 0$`: "0-3",
	},
}, {
	// gdb's habits on C: short forms, info, bt merged across ranks, a
	// display shown at each stop, list on, up into the application from
	// MPI, delete of all.
	name: "ring_c-habits", program: "ring_c",
	commands: []string{"b ring_c.c:27", "r", "wait", "info", "i lo", "bt", "disp next", "n", "n", "l", "l",
		"b MPI_Send", "c", "[0] wait", "[0] bt 1", "[0] up", "[0] info frame", "[0] down", "info display",
		"undisplay", "delete", "i b", "[0] cont", "wait"},
	want: map[string]string{
		`^    info sharedlibrary, dll `:                      "",
		`^#0  main \(argc=1, argv=[^,)]+\) at ring_c\.c:27$`: "0-3",
		`^1: next = 1$`: "0",
		`^1: next = 2$`: "1",
		`^stopped in main at ring_c\.c:34 \(end-stepping-range\)$`: "0-3",
		`^29\t`: "0-3",
		`^39\t        MPI_Send\(&message, 1, MPI_INT, next, tag, MPI_COMM_WORLD\);$`: "0-3",
		`^#0  P?MPI_Send \(\) from \S+$`:                                             "0",
		`^    \(More stack frames follow\.\.\.\)$`:                                   "",
		`^#1  main at ring_c\.c:39$`:                                                 "0",
		`^    39\t        MPI_Send\(&message`:                                        "",
		`^Stack level 1, frame at 0x`:                                                "0",
		`^1: next  \[0-3\]$`:                                                         "",
		`^no breakpoints$`:                                                           "0-3",
		`^exited with code 0$`:                                                       "0-3",
	},
}, {
	// C++: bt full's locals, list FILE:N, frame.
	name: "ring_cxx-habits", program: "ring_cxx", under: []string{"openmpi"},
	commands: []string{"break ring_cxx.cc:34", "run", "wait", "bt full", "list ring_cxx.cc:40,41", "frame",
		"delete", "continue", "wait"},
	want: map[string]string{
		`^#0  main \(argc=1, argv=[^,)]+\) at ring_cxx\.cc:34$`: "0-3",
		`^ +tag = 201$`:                 "",
		`^ +size = 4$`:                  "",
		`^40\t    if \(0 == rank\) \{$`: "0-3",
		`^#0  main at ring_cxx\.cc:34$`: "0-3",
		`^exited with code 0$`:          "0-3",
	},
}, {
	// Fortran: bt, a display, info locals by prefix.
	name: "ring_usempif08-habits", program: "ring_usempif08", under: []string{"openmpi"},
	commands: []string{"break ring_usempif08.f90:29", "run", "wait", "bt 1", "display tag", "next", "i lo",
		"delete", "continue", "wait"},
	want: map[string]string{
		`^#0  ring \(\) at ring_usempif08\.f90:29$`: "0-3",
		`^1: tag = 201$`: "0-3",
		`^stopped in ring at ring_usempif08\.f90:30 \(end-stepping-range\)$`: "0-3",
		`^exited with code 0$`: "0-3",
	},
}, {
	// HPCC: bt through its own functions, up, list there.
	name: "hpcc-habits", program: "hpcc", under: []string{"openmpi"},
	commands: []string{"break HPCC_InitHPL", "run", "wait", "bt", "up", "list", "kill"},
	want: map[string]string{
		`^#0  HPCC_InitHPL \(p=[^,)]+\) at \S*src/io\.c:\d+$`: "0-3",
		`^#1  HPCC_Init at \S*src/io\.c:\d+$`:                 "0-3",
		`^\d+\t`:                                              "0-3",
		`^exited \(killed\)$`:                                 "0-3",
	},
}}

func TestThirdPartyPrograms(t *testing.T) {
	tp := testenv.ThirdParty(t)
	for _, r := range mpiLaunches {
		t.Run(r.name, func(t *testing.T) {
			r.prepare(t)
			for _, s := range thirdPartySessions {
				under := s.under
				if under == nil {
					under = []string{"openmpi", "mpich"}
				}
				if !slices.Contains(under, r.name) {
					continue
				}
				t.Run(s.name, func(t *testing.T) {
					program, dir := tp.Program(t, r.mpi, s.program), t.TempDir()
					if s.program == "hpcc" {
						// HPCC reads its input from the working directory.
						input, err := os.ReadFile(filepath.Join(filepath.Dir(program), "hpccinf.txt"))
						if err != nil {
							t.Fatal(err)
						}
						os.WriteFile(filepath.Join(dir, "hpccinf.txt"), input, 0o644)
					}
					args := append([]string{"debug", "--rm", r.rm, "-n", "4", "--timeout", "90s"}, r.args...)
					for _, c := range s.commands {
						args = append(args, "-e", c)
					}
					out, stderr, code := runIn(t, dir, append(args, "--", program)...)
					if code != s.wantCode {
						t.Fatalf("sdm %s: exit %d, want %d\n%s\n%s", strings.Join(args, " "), code, s.wantCode, out, stderr)
					}
					for pattern, ranks := range s.want {
						checkLines(t, out, pattern, ranks)
					}
				})
			}
		})
	}
}

// checkLines fails unless the lines of out whose text after the rank set
// matches pattern are, together, of exactly the ranks given ("" for a
// line that has no rank set of its own, which must be there).
func checkLines(t *testing.T, out, pattern, ranks string) {
	t.Helper()
	re := regexp.MustCompile(pattern)
	var got wire.RankSet
	found := false
	for _, line := range strings.Split(out, "\n") {
		if ranks == "" {
			found = found || re.MatchString(line)
			continue
		}
		end := strings.IndexByte(line, ']')
		if !strings.HasPrefix(line, "[") || end < 0 || !re.MatchString(strings.TrimPrefix(line[end+1:], " ")) {
			continue
		}
		r, err := wire.ParseRankSet(line[1:end])
		if err != nil {
			continue
		}
		got, found = got.Union(r), true
	}
	switch {
	case ranks == "" && !found:
		t.Errorf("no line matches %q in\n%s", pattern, out)
	case ranks == "":
	case !found:
		t.Errorf("no line matches [%s] %q in\n%s", ranks, pattern, out)
	case got.String() != ranks:
		t.Errorf("lines matching %q have ranks %v, want %s, in\n%s", pattern, got, ranks, out)
	}
}

// runIn runs the sdm binary in dir and returns its standard output,
// standard error and exit code.
func runIn(t *testing.T, dir string, args ...string) (string, string, int) {
	t.Helper()
	cmd := testenv.Command(t, sdmBin, args...)
	cmd.Dir = dir
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		return out.String(), errOut.String(), ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return out.String(), errOut.String(), 0
}
