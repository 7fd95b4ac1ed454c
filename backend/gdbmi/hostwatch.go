package gdbmi

import (
	"strings"

	"github.com/sdm-hpc/sdm/internal/debugregs"
)

// errSharedSoftWatch refuses a watchpoint in a shared gdb where the debug
// registers do not trap: gdb would watch in software, stepping every
// thread of every rank the gdb holds, and in non-stop mode it misses the
// changes of a threaded program (an MPI program is one).
var errSharedSoftWatch = newRefusal("watch: " + noDebugRegs + ", and a gdb that ranks share cannot watch in software; with gdbs of one rank each (--ranks-per-gdb 1) it can, far slower")

// softWatch says whether a command (words: its name and arguments) sets
// a watchpoint that would be a software one.
func softWatch(name string, args []string) bool {
	if debugregs.Work() {
		return false
	}
	if name == "-break-watch" {
		return true
	}
	if name != "-interpreter-exec" || len(args) != 2 || args[0] != "console" {
		return false
	}
	w := strings.Fields(unquote(args[1]))
	return len(w) > 0 && (w[0] == "watch" || w[0] == "rwatch" || w[0] == "awatch")
}
