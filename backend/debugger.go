package backend

import "fmt"

// Debugger names the debugger beside every rank: the value of a server's
// --debugger (PTP's flag) and of the front end's.
type Debugger string

// The debuggers there are. GDB is written gdb-mi, as PTP passes it.
const (
	GDB Debugger = "gdb-mi" // a real gdb over MI (backend/gdbmi)
	Sim Debugger = "sim"    // simulated programs, no gdb (backend/sim)
)

// ParseDebugger reads a --debugger value: gdb-mi, gdb (the same) or sim.
func ParseDebugger(s string) (Debugger, error) {
	switch Debugger(s) {
	case GDB, "gdb":
		return GDB, nil
	case Sim:
		return Sim, nil
	}
	return "", fmt.Errorf("--debugger=%s is not available (have: gdb-mi, sim)", s)
}

// GDBStart says when a rank server of a real program starts its gdb: the
// value of the servers' and the front end's --gdb.
type GDBStart string

// The moments a gdb can start.
const (
	// Eager starts gdb with the program's start or the attach
	// (backend/gdbmi alone): every rank has its gdb from the first.
	Eager GDBStart = "eager"
	// Lazy starts it at the first command that needs one (backend/lazy):
	// stacks, status, halt, continue and kill need none.
	Lazy GDBStart = "lazy"
)

// Set reads a --gdb value into g: a GDBStart is a flag's value
// (pflag.Value).
func (g *GDBStart) Set(s string) error {
	start, err := ParseGDBStart(s)
	if err == nil {
		*g = start
	}
	return err
}

func (g *GDBStart) String() string { return string(*g) }

// Type names the flag's value in --help.
func (g *GDBStart) Type() string { return "when" }

// ParseGDBStart reads a --gdb value: lazy or eager.
func ParseGDBStart(s string) (GDBStart, error) {
	switch GDBStart(s) {
	case Eager, Lazy:
		return GDBStart(s), nil
	}
	return "", fmt.Errorf("--gdb %s: want lazy or eager", s)
}
