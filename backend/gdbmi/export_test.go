package gdbmi

// LoadStops is how many times a library load has stopped b's process so
// far, the program's start-up included.
func LoadStops(b *Backend) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.loadStops
}
