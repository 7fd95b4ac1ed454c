package stackwalk

import "golang.org/x/sys/unix"

// getRegs reads a stopped thread's registers into DWARF numbering.
func getRegs(th *stoppedThread) error {
	var r unix.PtraceRegs
	if err := unix.PtraceGetRegs(th.tid, &r); err != nil {
		return err
	}
	for i, v := range [numRegs]uint64{r.Rax, r.Rdx, r.Rcx, r.Rbx, r.Rsi, r.Rdi, r.Rbp, r.Rsp,
		r.R8, r.R9, r.R10, r.R11, r.R12, r.R13, r.R14, r.R15, r.Rip} {
		th.regs.set(uint64(i), v)
	}
	return nil
}

// checkArch is nil: this build samples amd64 processes.
func checkArch() error { return nil }
