// Package routes is the server side of the resource managers that tell
// every task where the others are: it turns a rank server's --routes_from
// and --port_base into the function that computes its routing table from
// the launcher's variables (rm/slurm, rm/pe). What enters is the source,
// the port base and the environment; what leaves is a routing.Table.
package routes

import (
	"fmt"
	"os"

	"github.com/sdm-hpc/sdm/rm/pe"
	"github.com/sdm-hpc/sdm/rm/slurm"
	"github.com/sdm-hpc/sdm/routing"
)

// Compute is the function that computes the table for source from lookup
// (the environment) and dir (the working directory, where POE's host list
// may be), or nil for a source that is not computed (file, publish).
func Compute(source routing.Source, portBase int, lookup func(string) (string, bool), dir string) (func() (*routing.Table, error), error) {
	if !source.Computed() {
		return nil, nil
	}
	if portBase < 1 || portBase > 65535 {
		return nil, fmt.Errorf("--routes_from=%s needs --port_base", source)
	}
	if source == routing.SourcePE {
		return func() (*routing.Table, error) { return pe.Routes(lookup, dir, portBase) }, nil
	}
	return func() (*routing.Table, error) { return slurm.Routes(lookup, portBase) }, nil
}

// Environ is Compute for this process: its environment and its working
// directory.
func Environ(source routing.Source, portBase int) (func() (*routing.Table, error), error) {
	dir, _ := os.Getwd()
	return Compute(source, portBase, os.LookupEnv, dir)
}
