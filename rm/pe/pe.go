// Package pe starts debug servers with IBM Parallel Environment's poe. POE
// gives every task its number (MP_CHILD), the number of tasks (MP_PROCS)
// and the host list that placed them, so the servers compute the routing
// table themselves (Routes) and the front end needs no part in it.
//
// PE cannot be installed on the machines sdm is tested on: the adapter is
// tested against a stand-in poe (integration/testdata/poe) that behaves as
// PE documents these variables and the host list.
//
// What enters: an rm.Spec, and at each server POE's environment. What
// leaves: poe's command line and the started job; at the servers, the
// routing table computed from that environment.
package pe

import (
	"strconv"

	"github.com/sdm-hpc/sdm/rm"
	"github.com/sdm-hpc/sdm/routing"
)

// Adapter is the PE adapter.
type Adapter struct{}

// Name implements rm.Adapter.
func (Adapter) Name() string { return "pe" }

// Launcher implements rm.Adapter.
func (Adapter) Launcher() string { return rm.FindProgram("poe") }

// Routes implements rm.Adapter.
func (Adapter) Routes() routing.Source { return routing.SourcePE }

// StartsMaster implements rm.Adapter.
func (Adapter) StartsMaster() bool { return false }

// Start implements rm.Adapter: poe sdm … -procs N [args]; poe takes the
// program first and its own flags after it.
func (a Adapter) Start(spec rm.Spec) (rm.Job, error) {
	argv := append([]string{spec.Program(a.Launcher())}, spec.ServerCommand(a.Routes())...)
	argv = append(append(argv, "-procs", strconv.Itoa(spec.Size)), spec.LauncherArgs...)
	return spec.Start(argv)
}
