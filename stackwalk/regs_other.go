//go:build !amd64

package stackwalk

import "runtime"

// Registers are a stopped thread's registers, in DWARF's numbering.
type Registers struct{ r registers }

// ReadRegisters says that this build walks no stacks.
func ReadRegisters(int) (Registers, error) { return Registers{}, checkArch() }

func checkArch() error { return &ArchError{Arch: runtime.GOARCH} }
