// Package rm holds what the resource-manager adapters share: the
// description of a debug job's servers and the handle of a started job.
// Each adapter (local, and later openmpi, mpich, slurm, pe) lives in its own
// subpackage and starts one `sdm` server per rank plus the master.
package rm

import "path/filepath"

// Spec describes the debug servers to start for a job.
type Spec struct {
	Size       int      // number of ranks
	Fanout     int      // tree shape (routing.Tree)
	SDM        string   // the sdm executable
	ServerArgs []string // extra flags for every server, such as --debugger=sim
	Env        []string // extra NAME=VALUE for servers and master
	Dir        string   // the session directory (0700): routing file, logs
	KeyFile    string   // the session key (0600), passed as --key-file
	Client     string   // the front end's session address, host:port
}

// RoutingFile is where the job's routing file lives.
func (s Spec) RoutingFile() string { return filepath.Join(s.Dir, "routes") }

// Job is a started job.
type Job interface {
	// Wait blocks until every process of the job has exited and says which
	// failed.
	Wait() error
	// Cancel stops the job's processes.
	Cancel()
}
