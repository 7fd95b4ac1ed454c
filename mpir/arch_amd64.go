package mpir

import "golang.org/x/sys/unix"

// breakpointInsn is int3.
var breakpointInsn = []byte{0xcc}

// trapPC is where a thread that stopped on a breakpoint instruction was
// stopped: int3 leaves the program counter past itself.
func trapPC(tid int) (uint64, error) {
	var regs unix.PtraceRegs
	if err := unix.PtraceGetRegs(tid, &regs); err != nil {
		return 0, err
	}
	return regs.Rip - uint64(len(breakpointInsn)), nil
}

func setPC(tid int, pc uint64) error {
	var regs unix.PtraceRegs
	if err := unix.PtraceGetRegs(tid, &regs); err != nil {
		return err
	}
	regs.Rip = pc
	return unix.PtraceSetRegs(tid, &regs)
}

const archSupported = true
