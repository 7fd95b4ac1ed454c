package launcher

import (
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/sdm-hpc/sdm/backend"
	"github.com/sdm-hpc/sdm/rm"
	"github.com/sdm-hpc/sdm/rm/local"
	"github.com/sdm-hpc/sdm/rm/mpich"
	"github.com/sdm-hpc/sdm/rm/openmpi"
	"github.com/sdm-hpc/sdm/rm/pe"
	"github.com/sdm-hpc/sdm/rm/slurm"
)

// Adapters are the resource managers sdm can start jobs with, by name.
var Adapters = map[string]rm.Adapter{
	"local":   local.Adapter{},
	"openmpi": openmpi.Adapter{},
	"mpich":   mpich.Adapter{},
	"slurm":   slurm.Adapter{},
	"pe":      pe.Adapter{},
}

// Pick returns the adapter called name ("" is local), and says why it was
// chosen. "auto" depends on the program: see Choose.
func Pick(name string) (rm.Adapter, string, error) {
	if name == "" {
		name = "local"
	}
	a, ok := Adapters[name]
	if !ok {
		names := make([]string, 0, len(Adapters))
		for n := range Adapters {
			names = append(names, n)
		}
		sort.Strings(names)
		return nil, "", &RefusedError{fmt.Sprintf("--rm %s: no such resource manager (have %s, and auto)", name, strings.Join(names, ", "))}
	}
	return a, "asked for", nil
}

// Detect picks a resource manager from the environment and the program:
// inside a SLURM allocation, SLURM; inside a POE partition, PE; else the
// MPI that the program links; else the local launcher.
func Detect(lookup func(string) (string, bool), program Linked) (name, why string) {
	if id, ok := lookup("SLURM_JOB_ID"); ok && id != "" {
		return "slurm", "inside SLURM job " + id
	}
	if procs, ok := lookup("MP_PROCS"); ok && procs != "" {
		return "pe", "POE's MP_PROCS is set"
	}
	if program.MPI != "" {
		return program.MPI, program.Why()
	}
	return "local", program.Why()
}

// RefusedError is a launch refused before anything started, because what
// the user asked for cannot work as meant: the error says why and what to
// do instead.
type RefusedError struct{ Reason string }

func (e *RefusedError) Error() string { return e.Reason }

// Choose returns the adapter for the job o describes (o.Adapter when set),
// why it was chosen ("" for the one the user named, as it was named, and
// for local when there is no program to read), and
// the launcher arguments the program needs under it. The default, "auto", is Detect's choice. A program that links
// another MPI than the one the adapter starts is refused (RefusedError)
// unless o.Force: its ranks would not find each other. Under SLURM, a
// program that links an MPI gets the srun --mpi plugin that suits it,
// unless the launcher arguments name one.
func Choose(o Options) (rm.Adapter, string, []string, error) {
	if o.Adapter != nil {
		return o.Adapter, "chosen for the job", o.LauncherArgs, nil
	}
	name := o.RM
	if name == "" {
		name = "auto"
	}
	var program Linked
	readable := o.Program != "" && o.Debugger != backend.Sim && o.Target == ""
	if readable {
		program = ReadLinked(o.Program, o.Dir)
	}
	var why string
	if name == "auto" {
		if o.Target != "" {
			return nil, "", nil, &RefusedError{fmt.Sprintf("--rm auto cannot read the program on %s: name the resource manager there (--rm slurm, openmpi, mpich or pe)", o.Target)}
		}
		name, why = Detect(os.LookupEnv, program)
		if !readable && name == "local" {
			why = "" // no program, no news: the sim backend's, say
		}
		if program.Library != "" && program.MPI == "" && name == "local" {
			return nil, "", nil, &RefusedError{program.Why()}
		}
	}
	adapter, _, err := Pick(name)
	if err != nil {
		return nil, "", nil, err
	}
	if err := mismatch(adapter, program, o.Size); err != nil && !o.Force {
		return nil, "", nil, err
	}
	args := o.LauncherArgs
	if plugin := srunPlugin[program.MPI]; adapter.Name() == "slurm" && plugin != "" && !rm.HasArg(args, "--mpi") {
		args = append([]string{"--mpi=" + plugin}, args...)
		if why != "" {
			why += "; "
		}
		why += fmt.Sprintf("%s links %s: srun --mpi=%s", program.Program, program.Name(), plugin)
	}
	return adapter, why, args, nil
}

// srunPlugin is the srun --mpi plugin for each MPI's programs: without
// one, where the cluster's MpiDefault is none, Open MPI's ranks fail in
// MPI_Init and MPICH's wait for ever.
var srunPlugin = map[string]string{"openmpi": "pmix", "mpich": "pmi2"}

// mismatch says why program cannot run as an MPI job of size ranks under
// adapter: a launcher that is not its MPI's starts every rank as a job of
// its own (a singleton), or not at all.
func mismatch(adapter rm.Adapter, program Linked, size int) error {
	switch adapter.Name() {
	case "local", "openmpi", "mpich":
	default:
		return nil // srun and poe start either MPI's programs (with the plugin)
	}
	if program.MPI == "" || program.MPI == adapter.Name() || size < 2 {
		return nil // any launcher runs a program without MPI, and one rank is a job of one
	}
	return &RefusedError{fmt.Sprintf("%s links %s (%s): under --rm %s each rank would be a separate one-rank job; use --rm %s (the default, auto, picks it) or --force",
		program.Program, program.Name(), program.Library, adapter.Name(), program.MPI)}
}

// using is the progress report of the adapter chosen: its name, and why
// when there is more to say than that the user named it.
func using(adapter rm.Adapter, why string) Progress {
	if why == "" {
		return Progress{Stage: StageUsing, Text: adapter.Name()}
	}
	return Progress{Stage: StageUsing, Text: adapter.Name() + " (" + why + ")", Why: why}
}
