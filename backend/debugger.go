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
