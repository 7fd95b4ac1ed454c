package integration

import "github.com/sdm-hpc/sdm/internal/debugregs"

// watchpoints is what a session needs for watchpoints (flags to add after
// its command) and what gdb lists one it set as: a hardware one, or, where
// this machine's debug registers do not trap (internal/debugregs), a
// software one, which only a gdb of one rank sets (sdm refuses it in a
// shared gdb).
func watchpoints() (flags []string, kind string) {
	if debugregs.Work() {
		return nil, "hw watchpoint"
	}
	return []string{"--ranks-per-gdb", "1"}, "watchpoint"
}
