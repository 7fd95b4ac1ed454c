package server

import (
	"strconv"
	"time"

	"github.com/spf13/pflag"

	"github.com/sdm-hpc/sdm/backend"
	"github.com/sdm-hpc/sdm/routing"
	"github.com/sdm-hpc/sdm/sdm"
	"github.com/sdm-hpc/sdm/wire"
)

// Flags registers the flags of a rank server and of the master, PTP's
// and sdm's, on fs, and returns the Config they fill in.
func Flags(fs *pflag.FlagSet) *Config {
	c := &Config{}
	fs.StringVar(&c.Debugger, "debugger", "gdb-mi", "debugger backend: gdb-mi or sim (simulated program, for tests and scale runs)")
	fs.StringVar(&c.GDB, "gdb", "eager", "with gdb-mi: when each rank's gdb starts: eager (with the program or the attach) or lazy (at the first command that needs one; stacks, status, halt, continue and kill need none)")
	fs.StringVar(&c.Prepare, "prepare", "", "with --gdb lazy: the program the job runs, whose libraries' symbols and DWARF the host's first server reads into the host's cache from its start, so that the first stacks wait for nothing (sdm sets it)")
	fs.StringVar(&c.DebuggerPath, "debugger_path", "", "path of the debugger executable (default: found in $PATH)")
	fs.StringVar(&c.Proxy, "proxy", "tcp", "master's link to the front end: tcp, or stdio (standard input and output)")
	fs.StringVar(&c.Host, "host", "", "master: the front end's host, which the master dials; without it the master listens on --listen and --port")
	fs.StringVar(&c.ListenHost, "listen", "127.0.0.1", "master without --host: the address its session port binds (0.0.0.0 for every interface, for a front end on another host)")
	fs.IntVar(&c.Port, "port", 12345, "master: the front end's session port")
	fs.BoolVar(&c.Master, "master", false, "run as the master, the root of the tree")
	fs.IntVar(&c.Index, "server", -1, "this server's index (default: from the environment)")
	fs.StringVar(&c.GenerateRoutes, "generate_routes", "", "master: write the routing file for servers on these comma-separated hosts (servers then need --server=ID)")
	fs.StringVar(&c.RoutingFile, "routing_file", "routing_file", "the routing file shared by the job")
	fs.IntVar(&c.Debug, "debug", 0, "log more to standard error (--debug or --debug=LEVEL)")
	fs.StringVar(&c.KeyFile, "key-file", "", "file holding the session key (mode 0600), instead of $"+wire.KeyEnv)
	fs.IntVar(&c.Fanout, "fanout", 0, "tree shape: 0 for PTP's binomial tree, K >= 2 for a K-ary tree; the same for every server")
	fs.Var((*routing.TreeShape)(&c.RankTree), "tree", "hosts: the servers of a host share one node of the tree (its first server's), which links to the other hosts' over TCP, its servers to it over a Unix socket; ranks: one node per server, every link TCP (PTP's tree); the same for every server and the master")
	fs.StringVar(&c.Members, "members", routing.MembersHand, "with --tree=hosts and no --layout: hand (a host's servers hand their ranks to its first server, which debugs them all; each only starts a gdb when asked, so that gdb and the programs it starts are its children; with --gdb lazy the first server starts a program before its gdb, with the member's environment, descriptors and processors) or serve (each server debugs its own rank, linked to the first); the same for every server")
	fs.IntVar(&c.RanksPerGDB, "ranks-per-gdb", backend.RanksPerGDB(), "how many of the ranks a server debugs (its host's, handed over, or laid out by an attach) share one gdb, an inferior each, gdb in non-stop mode; 1 gives each rank a gdb of its own (default $"+backend.RanksPerGDBEnv+", else "+strconv.Itoa(backend.DefaultRanksPerGDB)+"); the same for every server")
	fs.Var(&c.Layout, "layout", "the ranks of each server, by index, separated by colons (--layout 0-3:4-7): a server then debugs all of its ranks, one tree node per host; the same for every server and the master (default: server i debugs rank i)")
	fs.DurationVar(&c.Timeout, "timeout", 60*time.Second, "how long to wait for the routing file, the parent and the front end")
	fs.DurationVar(&c.EventWindow, "event_window", sdm.DefaultEventWindow, "how long a node holds events to merge them with other ranks'")
	fs.StringVar(&c.RoutesFrom, "routes_from", "file", "how a server finds the routing table: file (wait for --routing_file), publish (bind any port, publish it, wait for the file the front end writes), slurm or pe (compute it from the launcher's variables)")
	fs.IntVar(&c.PortBase, "port_base", 0, "with --routes_from=slurm or pe: the port of each node's first server (the next ones count up)")
	fs.Lookup("debug").NoOptDefVal = "1"
	return c
}
