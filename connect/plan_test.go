package connect

import (
	"reflect"
	"strings"
	"testing"
)

func TestPlanCommand(t *testing.T) {
	env := map[string]string{"SLURM_NTASKS": "16"}
	lookup := func(k string) string { return env[k] }
	for _, c := range []struct {
		argv []string
		n    int
		want Plan
	}{
		{[]string{"./prog", "-n", "3"}, 0, Plan{Mode: ModeProcess, RM: "local", Size: 1, Program: []string{"./prog", "-n", "3"}}},
		{[]string{"./prog"}, 4, Plan{Mode: ModeProcess, RM: "local", Size: 4, Program: []string{"./prog"}}},
		{[]string{"srun", "-n4", "--mpi=pmix", "./ring", "5"}, 0,
			Plan{Mode: ModeLauncher, RM: "slurm", Size: 4, Launcher: "srun", LauncherArgs: []string{"--mpi=pmix"}, Program: []string{"./ring", "5"}}},
		{[]string{"srun", "-p", "debug", "--ntasks", "2", "-l", "./ring"}, 0,
			Plan{Mode: ModeLauncher, RM: "slurm", Size: 2, Launcher: "srun", LauncherArgs: []string{"-p", "debug", "-l"}, Program: []string{"./ring"}}},
		{[]string{"srun", "./ring"}, 0, Plan{Mode: ModeLauncher, RM: "slurm", Size: 16, Launcher: "srun", Program: []string{"./ring"}}},
		{[]string{"/usr/bin/mpirun.openmpi", "--allow-run-as-root", "-np", "8", "--mca", "btl", "self,vader", "-x", "A=1", "./ring", "-np", "2"}, 0,
			Plan{Mode: ModeLauncher, RM: "openmpi", Size: 8, Launcher: "/usr/bin/mpirun.openmpi",
				LauncherArgs: []string{"--mca", "btl", "self,vader", "-x", "A=1"}, Program: []string{"./ring", "-np", "2"}}},
		{[]string{"mpiexec.hydra", "-n", "2", "-genv", "X", "1", "--", "./ring"}, 0,
			Plan{Mode: ModeLauncher, RM: "mpich", Size: 2, Launcher: "mpiexec.hydra", LauncherArgs: []string{"-genv", "X", "1"}, Program: []string{"./ring"}}},
		{[]string{"poe", "./ring", "5", "-procs", "3", "-labelio", "yes", "-v"}, 0,
			Plan{Mode: ModeLauncher, RM: "pe", Size: 3, Launcher: "poe", LauncherArgs: []string{"-labelio", "yes"}, Program: []string{"./ring", "5", "-v"}}},
	} {
		got, err := PlanCommand(c.argv, c.n, lookup)
		if err != nil || !reflect.DeepEqual(got, c.want) {
			t.Errorf("%q: %+v, %v\nwant %+v", c.argv, got, err, c.want)
		}
	}
}

func TestPlanCommandErrors(t *testing.T) {
	none := func(string) string { return "" }
	for _, c := range []struct {
		argv []string
		n    int
		want string
	}{
		{nil, 0, "no command"},
		{[]string{"mpirun", "./ring"}, 0, "mpirun: say how many ranks (-np N)"},
		{[]string{"mpirun", "-np", "2"}, 0, "mpirun: no program"},
		{[]string{"mpirun", "-np"}, 0, "-np needs a value"},
		{[]string{"srun", "-n", "0", "./ring"}, 0, `-n "0": want a number of ranks, 1 or more`},
		{[]string{"srun", "-n", "2", "./ring"}, 3, "-n goes in the srun command"},
		{[]string{"mpiexec", "-n", "2", "-genv", "X"}, 0, "-genv needs a value"},
	} {
		_, err := PlanCommand(c.argv, c.n, none)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want %q", c.argv, err, c.want)
		}
	}
}

func TestPlanForAStarterTakesNoRankCount(t *testing.T) {
	argv := []string{"mpirun", "-np", "4", "./ring"}
	p, err := PlanFor(argv, true, 0, func(string) string { return "" })
	if err != nil || p.Mode != ModeMPIR || strings.Join(p.Program, " ") != "mpirun -np 4 ./ring" {
		t.Errorf("PlanFor(mpir) = %+v, %v; want the starter's command as it is, through MPIR", p, err)
	}
	if _, err := PlanFor(argv, true, 4, nil); err == nil || err.Error() != "with --mpir, the rank count goes in the starter's command" {
		t.Errorf("a rank count beside --mpir: %v", err)
	}
	if p, err := PlanFor([]string{"./plain"}, false, 2, nil); err != nil || p.Mode != ModeProcess || p.Size != 2 {
		t.Errorf("PlanFor without mpir = %+v, %v; want PlanCommand's plan", p, err)
	}
}
