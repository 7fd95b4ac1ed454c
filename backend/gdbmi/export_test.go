package gdbmi

// LoadStops is how many times a library load has stopped b's process so
// far, the program's start-up included.
func LoadStops(b *Backend) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.loadStops
}

// Pid is the process id of b's program, the last one gdb started or
// attached to.
func Pid(b *Backend) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.lastPid
}

// Aggregate tells whether bt shows an argument of value v as "...".
var Aggregate = aggregate
