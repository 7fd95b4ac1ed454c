// Package debugregs says whether the processor's debug registers trigger
// for processes of this machine: gdb's hardware watchpoints and
// breakpoints rest on them, and some virtual machines take the registers'
// values without ever trapping on them, so a hardware watchpoint there
// never fires and the program runs past it.
package debugregs

import "sync"

var (
	once  sync.Once
	works bool
)

// Work says whether the debug registers trap here, probed once per
// process (a few milliseconds). When the probe cannot run (no ptrace, an
// architecture it does not know) they are taken to work, as gdb takes
// them.
func Work() bool {
	once.Do(func() {
		trapped, err := probe()
		works = trapped || err != nil
	})
	return works
}
