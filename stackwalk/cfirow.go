package stackwalk

import "fmt"

// The DWARF registers of amd64 that unwinding follows: the general
// registers, and the return address column (16).
const (
	regRBP  = 6
	regRSP  = 7
	regRA   = 16
	numRegs = 17
)

// ruleKind is how a caller's register is recovered (DWARF 5, 6.4.1).
type ruleKind uint8

const (
	ruleSame      ruleKind = iota // unchanged (the default here, as for callee-saved registers)
	ruleUndefined                 // not recoverable: for the return address, the outermost frame
	ruleOffset                    // saved at CFA+off
	ruleValOffset                 // is CFA+off
	ruleRegister                  // in register reg
	ruleExpr                      // saved at the address expr computes
	ruleValExpr                   // is the value expr computes
)

type rule struct {
	kind ruleKind
	off  int64
	reg  uint64
	expr []byte
}

// row is one row of a CFI table: how to find the CFA and each register of
// the caller at one pc.
type row struct {
	cfaReg  uint64
	cfaOff  int64
	cfaExpr []byte // when set, the CFA is what it computes
	regs    [numRegs]rule
}

// DW_CFA_* opcodes.
const (
	cfaAdvanceLoc        = 0x40
	cfaOffset            = 0x80
	cfaRestore           = 0xc0
	cfaNop               = 0x00
	cfaSetLoc            = 0x01
	cfaAdvanceLoc1       = 0x02
	cfaAdvanceLoc2       = 0x03
	cfaAdvanceLoc4       = 0x04
	cfaOffsetExtended    = 0x05
	cfaRestoreExtended   = 0x06
	cfaUndefined         = 0x07
	cfaSameValue         = 0x08
	cfaRegister          = 0x09
	cfaRememberState     = 0x0a
	cfaRestoreState      = 0x0b
	cfaDefCFA            = 0x0c
	cfaDefCFARegister    = 0x0d
	cfaDefCFAOffset      = 0x0e
	cfaDefCFAExpression  = 0x0f
	cfaExpression        = 0x10
	cfaOffsetExtendedSF  = 0x11
	cfaDefCFASF          = 0x12
	cfaDefCFAOffsetSF    = 0x13
	cfaValOffset         = 0x14
	cfaValOffsetSF       = 0x15
	cfaValExpression     = 0x16
	cfaGNUWindowSave     = 0x2d
	cfaGNUArgsSize       = 0x2e
	cfaGNUNegOffsetExt   = 0x2f
	maxRememberedStates  = 64
	maxInstructionsInRow = 1 << 16
)

// rowAt runs the CIE's initial instructions and the FDE's instructions up
// to pc (a link-time address inside the FDE) and returns the row for pc.
func (f *fde) rowAt(pc uint64) (row, error) {
	var initial row
	initial.cfaReg = regRSP
	if err := f.run(&initial, nil, f.cie.initial, ^uint64(0), f.begin); err != nil {
		return row{}, fmt.Errorf("CIE: %w", err)
	}
	r := initial
	if err := f.run(&r, &initial, f.insns, pc, f.begin); err != nil {
		return row{}, fmt.Errorf("FDE at %#x: %w", f.begin, err)
	}
	return r, nil
}

// run executes instructions on r until the location passes pc. initial is
// the row after the CIE's instructions (for DW_CFA_restore), nil while
// running those.
func (f *fde) run(r *row, initial *row, insns []byte, pc, loc uint64) error {
	c := f.cie
	in := &reader{b: insns}
	var stack []row
	set := func(reg uint64, ru rule) {
		if reg < numRegs {
			r.regs[reg] = ru
		}
	}
	restore := func(reg uint64) {
		if reg < numRegs {
			if initial != nil {
				r.regs[reg] = initial.regs[reg]
			} else {
				r.regs[reg] = rule{}
			}
		}
	}
	advance := func(delta uint64) bool {
		loc += delta * c.codeAlign
		return loc > pc
	}
	for n := 0; in.pos < len(in.b); n++ {
		if n > maxInstructionsInRow {
			return fmt.Errorf("%w: too many instructions", errCFI)
		}
		op := in.u8()
		switch op & 0xc0 {
		case cfaAdvanceLoc:
			if advance(uint64(op & 0x3f)) {
				return nil
			}
			continue
		case cfaOffset:
			set(uint64(op&0x3f), rule{kind: ruleOffset, off: int64(in.uleb()) * c.dataAlign})
			continue
		case cfaRestore:
			restore(uint64(op & 0x3f))
			continue
		}
		switch op {
		case cfaNop, cfaGNUWindowSave:
		case cfaSetLoc:
			var v uint64
			if c.addrSize == 4 {
				v = uint64(in.u32())
			} else {
				v = in.u64()
			}
			if c.fdeEnc != peAbsptr {
				return fmt.Errorf("%w: DW_CFA_set_loc with an encoded pointer", errCFI)
			}
			if v > pc {
				return nil
			}
			loc = v
		case cfaAdvanceLoc1:
			if advance(uint64(in.u8())) {
				return nil
			}
		case cfaAdvanceLoc2:
			if advance(uint64(in.u16())) {
				return nil
			}
		case cfaAdvanceLoc4:
			if advance(uint64(in.u32())) {
				return nil
			}
		case cfaOffsetExtended:
			reg := in.uleb()
			set(reg, rule{kind: ruleOffset, off: int64(in.uleb()) * c.dataAlign})
		case cfaRestoreExtended:
			restore(in.uleb())
		case cfaUndefined:
			set(in.uleb(), rule{kind: ruleUndefined})
		case cfaSameValue:
			set(in.uleb(), rule{kind: ruleSame})
		case cfaRegister:
			reg := in.uleb()
			set(reg, rule{kind: ruleRegister, reg: in.uleb()})
		case cfaRememberState:
			if len(stack) >= maxRememberedStates {
				return fmt.Errorf("%w: remembered states nested too deep", errCFI)
			}
			stack = append(stack, *r)
		case cfaRestoreState:
			if len(stack) == 0 {
				return fmt.Errorf("%w: DW_CFA_restore_state without a remembered state", errCFI)
			}
			// The CFA rule is not part of the state that is restored in
			// every producer's reading; GCC and LLVM both restore it.
			*r = stack[len(stack)-1]
			stack = stack[:len(stack)-1]
		case cfaDefCFA:
			r.cfaReg = in.uleb()
			r.cfaOff = int64(in.uleb())
			r.cfaExpr = nil
		case cfaDefCFASF:
			r.cfaReg = in.uleb()
			r.cfaOff = in.sleb() * c.dataAlign
			r.cfaExpr = nil
		case cfaDefCFARegister:
			r.cfaReg = in.uleb()
			r.cfaExpr = nil
		case cfaDefCFAOffset:
			r.cfaOff = int64(in.uleb())
		case cfaDefCFAOffsetSF:
			r.cfaOff = in.sleb() * c.dataAlign
		case cfaDefCFAExpression:
			r.cfaExpr = in.take(int(in.uleb()))
		case cfaExpression, cfaValExpression:
			reg := in.uleb()
			n := in.uleb()
			if n > uint64(len(in.b)) {
				return fmt.Errorf("%w: expression past the end", errCFI)
			}
			kind := ruleExpr
			if op == cfaValExpression {
				kind = ruleValExpr
			}
			set(reg, rule{kind: kind, expr: in.take(int(n))})
		case cfaOffsetExtendedSF:
			reg := in.uleb()
			set(reg, rule{kind: ruleOffset, off: in.sleb() * c.dataAlign})
		case cfaValOffset:
			reg := in.uleb()
			set(reg, rule{kind: ruleValOffset, off: int64(in.uleb()) * c.dataAlign})
		case cfaValOffsetSF:
			reg := in.uleb()
			set(reg, rule{kind: ruleValOffset, off: in.sleb() * c.dataAlign})
		case cfaGNUArgsSize:
			in.uleb()
		case cfaGNUNegOffsetExt:
			reg := in.uleb()
			set(reg, rule{kind: ruleOffset, off: -int64(in.uleb()) * c.dataAlign})
		default:
			return fmt.Errorf("%w: unknown instruction %#x", errCFI, op)
		}
		if in.err {
			return fmt.Errorf("%w: truncated instruction %#x", errCFI, op)
		}
	}
	return nil
}
