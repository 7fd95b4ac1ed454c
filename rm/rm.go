// Package rm holds what the resource-manager adapters share: the
// description of a debug job's servers, the adapter interface, the handle
// of a started job, and the process that runs a launcher. Each adapter
// (local, openmpi, mpich, slurm, pe) lives in its own subpackage and
// starts one `sdm` server per rank.
//
// What enters an adapter: a Spec (the servers of a debug job: size, tree
// shape, sdm binary and its flags, session directory and key, the front
// end's address). What leaves: a started Job (to
// wait for or end) and how its servers find their routing table (Routes).
package rm

import (
	"fmt"
	"net"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/sdm-hpc/sdm/routing"
	"github.com/sdm-hpc/sdm/wire"
)

// Spec describes the debug servers to start for a job.
type Spec struct {
	Size   int    // number of servers: ranks, without a Layout
	Fanout int    // tree shape (routing.Tree)
	SDM    string // the sdm executable
	// Server, when set, is the executable of the servers and the master
	// (sdm-server, the server role alone); SDM otherwise.
	Server     string
	ServerArgs []string // extra flags for every server, such as --debugger=gdb-mi
	Env        []string // extra NAME=VALUE for servers and master
	Dir        string   // the session directory (0700): routing file, logs
	KeyFile    string   // the session key (0600), passed as --key-file
	Client     string   // the front end's session address, host:port
	// Layout, when set, is the ranks of each server, which the master and
	// every server are given (--layout); nil is one rank per server.
	Layout wire.Layout
	// Launcher, when set, replaces the adapter's launcher program (a path
	// to mpirun, say); LauncherArgs go to it before the server command.
	Launcher     string
	LauncherArgs []string
	// RankTree gives the master and every server --tree=ranks: one tree
	// node per server rather than per host.
	RankTree bool
	// PortBase is the first port of each node's servers, for adapters
	// whose servers compute the routing table themselves.
	PortBase int
	// Log is the local file that collects the output of the launcher (and
	// of the servers, where they write it there).
	Log string
	// Remote, when set, turns a command line and its environment into the
	// command that runs them on another host (over ssh): Dir, KeyFile and
	// SDM are then paths on that host.
	Remote func(argv, env []string) []string
}

// Start runs a launcher command line (with Env) where the job runs: here,
// or through Remote.
func (s Spec) Start(argv []string) (*Process, error) {
	env := s.Env
	if s.Remote != nil {
		argv, env = s.Remote(argv, s.Env), nil
	}
	return StartProcess(argv, env, s.Log)
}

// ServerExe is the executable that runs the servers and the master.
func (s Spec) ServerExe() string {
	if s.Server != "" {
		return s.Server
	}
	return s.SDM
}

// ServerCommand is the command line of every server: the server executable
// with the flags that find the routing table (routesFrom, the server's
// --routes_from) and the session key, and the extra ServerArgs.
func (s Spec) ServerCommand(routesFrom routing.Source) []string {
	argv := []string{s.ServerExe(), "--routes_from=" + string(routesFrom), "--routing_file=" + s.RoutingFile(),
		"--key-file=" + s.KeyFile, "--fanout=" + strconv.Itoa(s.Fanout)}
	if s.PortBase > 0 {
		argv = append(argv, "--port_base="+strconv.Itoa(s.PortBase))
	}
	if s.Layout != nil {
		argv = append(argv, "--layout="+s.Layout.String())
	}
	if s.RankTree {
		argv = append(argv, "--tree=ranks")
	}
	return append(argv, s.ServerArgs...)
}

// MasterCommand is the master's command line, for a master that dials the
// front end at s.Client.
func (s Spec) MasterCommand() ([]string, error) {
	host, port, err := net.SplitHostPort(s.Client)
	if err != nil {
		return nil, fmt.Errorf("session address %q: %w", s.Client, err)
	}
	argv := []string{s.ServerExe(), "--master", "--host=" + host, "--port=" + port, "--routing_file=" + s.RoutingFile(),
		"--key-file=" + s.KeyFile, "--fanout=" + strconv.Itoa(s.Fanout)}
	if s.Layout != nil {
		argv = append(argv, "--layout="+s.Layout.String())
	}
	if s.RankTree {
		argv = append(argv, "--tree=ranks")
	}
	return argv, nil
}

// Program returns s.Launcher when set (as given), else the first of names
// found in $PATH (or the first name, for a clear error later).
func (s Spec) Program(names ...string) string {
	if s.Launcher != "" {
		return s.Launcher
	}
	return FindProgram(names...)
}

// FindProgram returns the first of names found in $PATH, or else the
// first name. It returns the name, not the path: a launcher is run as the
// user would type it, since some take their path for advice (Open MPI's
// mpirun reads an absolute argv[0] such as /bin/mpirun as --prefix /bin/..,
// which is wrong where /bin is a link to /usr/bin).
func FindProgram(names ...string) string {
	for _, n := range names {
		if _, err := exec.LookPath(n); err == nil {
			return n
		}
	}
	return names[0]
}

// RoutingFile is where the job's routing file lives.
func (s Spec) RoutingFile() string { return filepath.Join(s.Dir, "routes") }

// Adapter starts the servers of a job through one resource manager.
type Adapter interface {
	// Name is the adapter's name, as given to --rm.
	Name() string
	// Launcher is the program the adapter runs to start the job (mpirun,
	// srun, …), checked before anything is submitted; "" for none.
	Launcher() string
	// Routes is how the servers find their routing table (the server's
	// --routes_from): SourcePublish means that the front end must help
	// the launch, collecting the entries the servers publish into the
	// routing file; SourceSLURM and SourcePE that the servers compute it
	// themselves from the resource manager's information; SourceFile that
	// the adapter writes it.
	Routes() routing.Source
	// StartsMaster says whether Start also starts the master; otherwise
	// the front end does.
	StartsMaster() bool
	// Start submits the job.
	Start(Spec) (Job, error)
}

// Commander is an adapter whose launcher can start any program: the
// user's own, with no sdm around it, to be acquired through MPIR.
type Commander interface {
	// Command is the launcher's command line that starts program as a
	// job of spec.Size ranks, and what it needs in its environment.
	Command(spec Spec, program []string) (argv, env []string)
}

// Job is a started job.
type Job interface {
	// Done is closed once every process of the job has exited.
	Done() <-chan struct{}
	// Wait blocks until Done and says which process failed and how, in the
	// launcher's own words where there are some.
	Wait() error
	// Cancel stops the job's processes: SIGTERM, then SIGKILL after a
	// grace period.
	Cancel()
}

// Labeller is a Commander whose launcher can start each line of its ranks'
// output with the rank (mpirun --tag-output, srun --label), so that
// output that reaches sdm through the launcher shows whose it is.
type Labeller interface {
	// LabelArgs are the launcher arguments that ask for the labels; none
	// when args ask for them already.
	LabelArgs(args []string) []string
	// Unlabel splits a labelled line into the rank, the stream ("stdout",
	// "stderr", or "tty" when the launcher does not tell them apart) and
	// the text; ok is false for a line without a label, such as the
	// launcher's own messages.
	Unlabel(line string) (rank int, stream, text string, ok bool)
}

// HasArg says whether args hold one of names, alone or as name=value.
func HasArg(args []string, names ...string) bool {
	for _, a := range args {
		for _, n := range names {
			if a == n || strings.HasPrefix(a, n+"=") {
				return true
			}
		}
	}
	return false
}
