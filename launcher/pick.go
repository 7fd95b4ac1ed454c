package launcher

import (
	"fmt"
	"os"
	"os/exec"
	"sort"
	"strings"

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

// Pick returns the adapter called name, or for "auto" the one the
// environment calls for, and says why it was chosen.
func Pick(name string) (rm.Adapter, string, error) {
	if name == "" {
		name = "local"
	}
	why := "asked for"
	if name == "auto" {
		name, why = Detect(os.LookupEnv, exec.LookPath)
	}
	a, ok := Adapters[name]
	if !ok {
		names := make([]string, 0, len(Adapters))
		for n := range Adapters {
			names = append(names, n)
		}
		sort.Strings(names)
		return nil, "", fmt.Errorf("--rm %s: no such resource manager (have %s, and auto)", name, strings.Join(names, ", "))
	}
	return a, why, nil
}

// Detect picks a resource manager from the environment: inside a SLURM
// allocation, SLURM; inside a POE partition, PE; else the MPI whose
// launcher is installed (Open MPI before MPICH); else the local launcher.
func Detect(lookup func(string) (string, bool), lookPath func(string) (string, error)) (name, why string) {
	if id, ok := lookup("SLURM_JOB_ID"); ok && id != "" {
		return "slurm", "inside SLURM job " + id
	}
	if procs, ok := lookup("MP_PROCS"); ok && procs != "" {
		return "pe", "POE's MP_PROCS is set"
	}
	for _, c := range []struct{ name, program string }{
		{"openmpi", "mpirun.openmpi"}, {"mpich", "mpiexec.hydra"}, {"mpich", "mpiexec.mpich"},
	} {
		if path, err := lookPath(c.program); err == nil {
			return c.name, path + " is installed"
		}
	}
	return "local", "no resource manager found"
}
