package server

import (
	"context"
	"os"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/sdm-hpc/sdm/backend"
	"github.com/sdm-hpc/sdm/backend/gdbmi"
	"github.com/sdm-hpc/sdm/backend/lazy"
	"github.com/sdm-hpc/sdm/internal/handover/vars"
	"github.com/sdm-hpc/sdm/internal/inherit"
	"github.com/sdm-hpc/sdm/internal/procfs"
	"github.com/sdm-hpc/sdm/wire"
)

// ranksPerGDB is how many ranks share a gdb: RanksPerGDB, 0 for the
// default.
func (c *Config) ranksPerGDB() int {
	if c.RanksPerGDB == 0 {
		return backend.RanksPerGDB()
	}
	return c.RanksPerGDB
}

// share is the backend of a member's rank on one of the host's shared
// gdbs: its program gets the environment and the processors the member's
// launcher gave the member, and a gdb the pool needs for it is the
// member's child, as the rank's own gdb would be.
func (c *Config) share(bc backend.Config, m *wire.Member) *gdbmi.Backend {
	share := gdbmi.Share{
		Env: c.inherited(memberEnv(m.Pid), m.Pid),
		Start: func(ctx context.Context) (*gdbmi.GDB, error) {
			s, err := m.Spawn(ctx)
			if err != nil {
				return nil, err
			}
			path := c.DebuggerPath
			if path == "" {
				path = "gdb"
			}
			return gdbmi.Adopt(path, s), nil
		},
	}
	share.CPUs = cpusOf(m.Pid)
	return gdbmi.NewShared(bc, c.pool, share)
}

// origin is where a member's rank's program comes from when the first
// server, debugging the rank lazily, starts it itself: the member's
// environment, descriptors and processors.
func (c *Config) origin(m *wire.Member) *lazy.Origin {
	return &lazy.Origin{Pid: m.Pid, Env: memberEnv(m.Pid), CPUs: cpusOf(m.Pid)}
}

// cpusOf is the processors process pid may run on, nil when unknown.
func cpusOf(pid int) *unix.CPUSet {
	var cpus unix.CPUSet
	if err := unix.SchedGetaffinity(pid, &cpus); err != nil {
		return nil
	}
	return &cpus
}

// memberEnv is the environment a member's gdb, and so its program, would
// have: the member's, without what the member keeps to itself (its
// listening socket, its GOMAXPROCS), as it drops them before it spawns a
// gdb. nil when it cannot be read.
func memberEnv(pid int) []string {
	env, err := procfs.Environ(pid)
	if err != nil {
		return nil
	}
	return programEnv(env)
}

// ownShare is what the leader's own rank brings to a shared gdb, which a
// member may have started: the leader's environment, descriptors and
// processors.
func (c *Config) ownShare() gdbmi.Share {
	return gdbmi.Share{Env: c.inherited(programEnv(os.Environ()), os.Getpid()), CPUs: cpusOf(0)}
}

// programEnv is a server's environment without what is the server's
// alone: its listening socket, its GOMAXPROCS, the session key.
func programEnv(environ []string) []string {
	var env []string
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		switch name {
		case vars.ListenFD, vars.GOMAXPROCS, "GOMAXPROCS", wire.KeyEnv, vars.KeyFD:
			continue
		}
		env = append(env, kv)
	}
	return env
}

// wrapper is the command line that starts the programs of a shared gdb:
// this executable as package inherit's wrapper, which gives each program
// the descriptors of its rank's server; "" when this executable cannot
// be named.
func wrapper() string {
	self, err := os.Executable()
	if err != nil {
		return ""
	}
	// gdb runs it through the shell.
	return "'" + strings.ReplaceAll(self, "'", `'\''`) + "' " + inherit.Flag
}

// inherited adds to env, a program's environment, what has the wrapper
// give it the descriptors of server pid, as a gdb that server started
// would: a gdb that another server started holds that server's.
func (c *Config) inherited(env []string, pid int) []string {
	if env == nil || c.pool.Wrapper == "" {
		return env
	}
	fds, err := inherit.Of(pid)
	if err != nil {
		c.Log.Printf("the descriptors of server process %d, for its rank's program: %v", pid, err)
	}
	return append(env, inherit.Env+"="+inherit.Value(pid, fds))
}
