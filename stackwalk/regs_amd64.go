package stackwalk

import "golang.org/x/sys/unix"

// Registers are a stopped thread's registers, in DWARF's numbering.
type Registers struct{ r registers }

// ReadRegisters reads the registers of thread tid, which must be in a
// ptrace-stop of the calling OS thread's (its tracer's).
func ReadRegisters(tid int) (Registers, error) {
	var r unix.PtraceRegs
	if err := unix.PtraceGetRegs(tid, &r); err != nil {
		return Registers{}, err
	}
	var regs Registers
	for i, v := range [numRegs]uint64{r.Rax, r.Rdx, r.Rcx, r.Rbx, r.Rsi, r.Rdi, r.Rbp, r.Rsp,
		r.R8, r.R9, r.R10, r.R11, r.R12, r.R13, r.R14, r.R15, r.Rip} {
		regs.r.set(uint64(i), v)
	}
	return regs, nil
}

// checkArch is nil: this build samples amd64 processes.
func checkArch() error { return nil }
