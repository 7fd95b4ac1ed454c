package connect

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// Mode is how a command is started for debugging.
type Mode string

// The modes, as requests spell them.
const (
	// ModeLauncher: a known launcher, each rank wrapped by a server
	// through its resource-manager adapter.
	ModeLauncher Mode = "launcher"
	// ModeMPIR: the command is a starter, its ranks acquired through MPIR.
	ModeMPIR Mode = "mpir"
	// ModeProcess: the command itself, on this machine, as Size ranks of
	// the local launcher.
	ModeProcess Mode = "process"
)

// Plan is how a command is debugged.
type Plan struct {
	Mode Mode   `json:"mode"`
	RM   string `json:"rm,omitempty"` // the adapter: local, openmpi, mpich, slurm, pe
	Size int    `json:"size,omitempty"`
	// Launcher and LauncherArgs are the launcher and its options, less
	// the rank count, which the adapter gives.
	Launcher     string   `json:"launcher,omitempty"`
	LauncherArgs []string `json:"launcher_args,omitempty"`
	Program      []string `json:"program,omitempty"` // the program and its arguments
}

func (p Plan) String() string {
	switch p.Mode {
	case ModeLauncher:
		return fmt.Sprintf("%d ranks of %s under %s", p.Size, p.Program[0], p.RM)
	case ModeMPIR:
		return "a starter, its ranks acquired through MPIR"
	}
	if p.Size == 1 {
		return "one process"
	}
	return fmt.Sprintf("%d processes", p.Size)
}

func (p Plan) check() error {
	switch p.Mode {
	case ModeLauncher, ModeProcess, ModeMPIR:
	default:
		return fmt.Errorf("mode %q", p.Mode)
	}
	if p.Mode != ModeMPIR && (p.Size < 1 || p.Size > 1<<22) {
		return fmt.Errorf("%d ranks", p.Size)
	}
	if len(p.Program) == 0 || p.Program[0] == "" {
		return errors.New("no program")
	}
	return nil
}

// launcherSyntax is what sdm knows of a launcher's command line: the
// adapter, the options that give the number of ranks, the options that
// take a value (as the next word unless written --opt=value), and where
// the number of ranks comes from when the command does not say.
type launcherSyntax struct {
	rm      string
	size    []string
	valued  []string
	sizeEnv []string
	// optionsAfter: poe takes its options after the program, mixed with
	// the program's.
	optionsAfter bool
}

var launchers = map[string]launcherSyntax{
	"srun": {rm: "slurm", size: []string{"-n", "--ntasks"}, sizeEnv: []string{"SLURM_NTASKS", "SLURM_NPROCS"},
		valued: []string{"-N", "--nodes", "-c", "--cpus-per-task", "-p", "--partition", "-t", "--time",
			"-J", "--job-name", "-o", "--output", "-e", "--error", "-i", "--input", "-w", "--nodelist",
			"-x", "--exclude", "-A", "--account", "-D", "--chdir", "-m", "--distribution", "-G", "--gpus",
			"-C", "--constraint", "-d", "--dependency", "-q", "--qos", "-L", "--licenses", "-M", "--clusters",
			"-r", "--relative", "--mpi", "--mem", "--mem-per-cpu", "--ntasks-per-node", "--cpu-bind",
			"--export", "--gres", "--reservation", "--begin", "--signal"}},
	"mpirun": {rm: "openmpi", size: []string{"-np", "-n", "--np", "-c"},
		valued: []string{"-H", "-host", "--host", "-hostfile", "--hostfile", "-machinefile", "--machinefile",
			"-x", "-mca", "--mca", "-map-by", "--map-by", "-bind-to", "--bind-to", "-rank-by", "--rank-by",
			"-npernode", "--npernode", "-npersocket", "--npersocket", "-wdir", "--wdir", "-wd", "-prefix",
			"--prefix", "-output-filename", "--output-filename", "-tune", "--tune", "-am", "--am"}},
	"mpiexec": {rm: "mpich", size: []string{"-n", "-np"},
		valued: []string{"-f", "-hostfile", "-machinefile", "-hosts", "-host", "-ppn", "-wdir", "-launcher",
			"-launcher-exec", "-iface", "-bootstrap", "-bootstrap-exec", "-rmk", "-genvlist", "-envlist",
			"-configfile"},
	},
	"poe": {rm: "pe", size: []string{"-procs"}, sizeEnv: []string{"MP_PROCS"}, optionsAfter: true,
		valued: []string{"-hostfile", "-hfile", "-nodes", "-tasks_per_node", "-euidevice", "-euilib",
			"-labelio", "-stdoutmode", "-rmpool", "-resd", "-savehostfile", "-pgmmodel"}},
}

// pairs are options that take two values (mpirun's --mca NAME VALUE,
// mpiexec's -env NAME VALUE).
var pairs = map[string]bool{"-mca": true, "--mca": true, "-env": true, "-genv": true}

// Which names the launcher argv[0] is, by its base name (mpirun.openmpi is
// mpirun; mpiexec.hydra and mpiexec.mpich are mpiexec), or "".
func Which(argv0 string) string {
	base := filepath.Base(argv0)
	for name := range launchers {
		if base == name || strings.HasPrefix(base, name+".") {
			return name
		}
	}
	return ""
}

// PlanFor is PlanCommand's plan for argv, or with mpir set the plan of a
// starter started as it is, whose ranks are acquired through MPIR: its
// own command line says how many, so n must be 0.
func PlanFor(argv []string, mpir bool, n int, env func(string) string) (Plan, error) {
	if !mpir {
		return PlanCommand(argv, n, env)
	}
	if n != 0 {
		return Plan{}, errors.New("with --mpir, the rank count goes in the starter's command")
	}
	return Plan{Mode: ModeMPIR, Program: argv}, nil
}

// PlanCommand works out how to debug argv: under its launcher's adapter
// when argv[0] is a known launcher, else as n processes of the program on
// this machine (n 0 means one). env looks up the environment, for a rank
// count the batch system gives.
func PlanCommand(argv []string, n int, env func(string) string) (Plan, error) {
	if len(argv) == 0 {
		return Plan{}, errors.New("no command")
	}
	name := Which(argv[0])
	if name == "" {
		if n == 0 {
			n = 1
		}
		return Plan{Mode: ModeProcess, RM: "local", Size: n, Program: argv}, nil
	}
	if n != 0 {
		return Plan{}, fmt.Errorf("-n goes in the %s command, not before it", name)
	}
	syn := launchers[name]
	p := Plan{Mode: ModeLauncher, RM: syn.rm, Launcher: argv[0]}
	var err error
	if syn.optionsAfter {
		err = p.splitAfter(argv[1:], syn)
	} else {
		err = p.splitBefore(argv[1:], syn)
	}
	if err != nil {
		return Plan{}, fmt.Errorf("%s: %w", name, err)
	}
	for _, v := range syn.sizeEnv {
		if p.Size == 0 && env(v) != "" {
			if p.Size, err = positive(v, env(v)); err != nil {
				return Plan{}, err
			}
		}
	}
	if p.Size == 0 {
		return Plan{}, fmt.Errorf("%s: say how many ranks (%s N)", name, syn.size[0])
	}
	if len(p.Program) == 0 {
		return Plan{}, fmt.Errorf("%s: no program in %q", name, strings.Join(argv, " "))
	}
	return p, nil
}

// splitBefore takes the launcher's options up to the first word that is
// not one, the program.
func (p *Plan) splitBefore(args []string, syn launcherSyntax) error {
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !strings.HasPrefix(a, "-") || a == "-" {
			p.Program = args[i:]
			return nil
		}
		if a == "--" {
			p.Program = args[i+1:]
			return nil
		}
		used, err := p.option(args, i, syn)
		if err != nil {
			return err
		}
		i += used
	}
	return nil
}

// splitAfter is poe's syntax: the program first, then its arguments and
// poe's options in any order.
func (p *Plan) splitAfter(args []string, syn launcherSyntax) error {
	if len(args) == 0 {
		return nil
	}
	p.Program = []string{args[0]}
	for i := 1; i < len(args); i++ {
		a := args[i]
		if !slices.Contains(syn.size, optionName(a)) && !slices.Contains(syn.valued, optionName(a)) {
			p.Program = append(p.Program, a)
			continue
		}
		used, err := p.option(args, i, syn)
		if err != nil {
			return err
		}
		i += used
	}
	return nil
}

// option takes the option at args[i] into the plan and says how many
// words after it were its values.
func (p *Plan) option(args []string, i int, syn launcherSyntax) (int, error) {
	a := args[i]
	name, value, inline := strings.Cut(a, "=")
	if !inline && !strings.HasPrefix(a, "--") && len(a) > 2 && slices.Contains(syn.size, a[:2]) && isDigits(a[2:]) {
		name, value, inline = a[:2], a[2:], true // srun -n4
	}
	takes := 0
	switch {
	case pairs[name]:
		takes = 2
	case slices.Contains(syn.size, name), slices.Contains(syn.valued, name):
		takes = 1
	}
	if inline {
		takes--
	}
	if takes < 0 {
		takes = 0
	}
	if i+takes >= len(args) {
		return 0, fmt.Errorf("%s needs a value", name)
	}
	if slices.Contains(syn.size, name) {
		if !inline {
			value = args[i+1]
		}
		n, err := positive(name, value)
		if err != nil {
			return 0, err
		}
		p.Size = n
		return takes, nil
	}
	if name != "--allow-run-as-root" { // the adapter adds it where needed
		p.LauncherArgs = append(p.LauncherArgs, args[i:i+takes+1]...)
	}
	return takes, nil
}

func optionName(a string) string {
	name, _, _ := strings.Cut(a, "=")
	return name
}

func positive(what, s string) (int, error) {
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		return 0, fmt.Errorf("%s %q: want a number of ranks, 1 or more", what, s)
	}
	return n, nil
}

func isDigits(s string) bool {
	_, err := strconv.Atoi(s)
	return err == nil
}
