package backend

import (
	"os"
	"strconv"
)

// DefaultRanksPerGDB is how many of a host's ranks share a gdb unless
// --ranks-per-gdb or $SDM_RANKS_PER_GDB say otherwise. 64 ranks of a
// small C program reach a breakpoint fastest in gdbs of 16 (0.9 s, 1.1 s
// in gdbs of 8 and 1.2 s of 32, 6.2 s a gdb per rank), with 5 to 8 times
// less CPU and 15 times less memory (docs/PERFORMANCE.md), and a gdb
// that dies or hangs takes no more than 16 ranks with it.
const DefaultRanksPerGDB = 16

// RanksPerGDBEnv, when set, is the default of --ranks-per-gdb, for the
// servers and the front end.
const RanksPerGDBEnv = "SDM_RANKS_PER_GDB"

// RanksPerGDB is --ranks-per-gdb's default: $SDM_RANKS_PER_GDB when it
// holds a number of 1 or more, else DefaultRanksPerGDB.
func RanksPerGDB() int {
	if n, err := strconv.Atoi(os.Getenv(RanksPerGDBEnv)); err == nil && n >= 1 {
		return n
	}
	return DefaultRanksPerGDB
}
