package stackwalk

import (
	"errors"
	"fmt"
)

// memReader reads a target's memory: 8 bytes at addr, or an error.
type memReader interface {
	read64(addr uint64) (uint64, error)
}

// registers of one frame: DWARF numbering, with a mask of the ones known.
type registers struct {
	v     [numRegs]uint64
	known uint32
}

func (r *registers) get(reg uint64) (uint64, bool) {
	if reg >= numRegs || r.known&(1<<reg) == 0 {
		return 0, false
	}
	return r.v[reg], true
}

func (r *registers) set(reg uint64, v uint64) {
	r.v[reg] = v
	r.known |= 1 << reg
}

var errExpr = errors.New("bad DWARF expression")

// DW_OP_* opcodes that call frame information uses.
const (
	opAddr       = 0x03
	opDeref      = 0x06
	opConst1u    = 0x08
	opConst1s    = 0x09
	opConst2u    = 0x0a
	opConst2s    = 0x0b
	opConst4u    = 0x0c
	opConst4s    = 0x0d
	opConst8u    = 0x0e
	opConst8s    = 0x0f
	opConstu     = 0x10
	opConsts     = 0x11
	opDup        = 0x12
	opDrop       = 0x13
	opOver       = 0x14
	opPick       = 0x15
	opSwap       = 0x16
	opRot        = 0x17
	opAbs        = 0x19
	opAnd        = 0x1a
	opDiv        = 0x1b
	opMinus      = 0x1c
	opMod        = 0x1d
	opMul        = 0x1e
	opNeg        = 0x1f
	opNot        = 0x20
	opOr         = 0x21
	opPlus       = 0x22
	opPlusUconst = 0x23
	opShl        = 0x24
	opShr        = 0x25
	opShra       = 0x26
	opXor        = 0x27
	opBra        = 0x28
	opEq         = 0x29
	opGe         = 0x2a
	opGt         = 0x2b
	opLe         = 0x2c
	opLt         = 0x2d
	opNe         = 0x2e
	opSkip       = 0x2f
	opLit0       = 0x30
	opLit31      = 0x4f
	opReg0       = 0x50
	opReg31      = 0x6f
	opBreg0      = 0x70
	opBreg31     = 0x8f
	opRegx       = 0x90
	opBregx      = 0x92
	opDerefSize  = 0x94
	opNop        = 0x96

	maxExprSteps = 10000
	maxExprStack = 256
)

// evalExpr evaluates a DWARF expression of call frame information with
// push already on the stack (the CFA, for register rules) and returns the
// value on top of the stack at the end.
func evalExpr(expr []byte, regs *registers, mem memReader, push ...uint64) (uint64, error) {
	st := append(make([]uint64, 0, 16), push...)
	in := &reader{b: expr}
	pop := func() (uint64, error) {
		if len(st) == 0 {
			return 0, fmt.Errorf("%w: stack underflow", errExpr)
		}
		v := st[len(st)-1]
		st = st[:len(st)-1]
		return v, nil
	}
	reg := func(n uint64) (uint64, error) {
		v, ok := regs.get(n)
		if !ok {
			return 0, fmt.Errorf("%w: register %d unknown", errExpr, n)
		}
		return v, nil
	}
	for steps := 0; in.pos < len(in.b); steps++ {
		if steps > maxExprSteps || len(st) > maxExprStack {
			return 0, fmt.Errorf("%w: runs too long", errExpr)
		}
		op := in.u8()
		switch {
		case op >= opLit0 && op <= opLit31:
			st = append(st, uint64(op-opLit0))
			continue
		case op >= opReg0 && op <= opReg31:
			v, err := reg(uint64(op - opReg0))
			if err != nil {
				return 0, err
			}
			st = append(st, v)
			continue
		case op >= opBreg0 && op <= opBreg31:
			v, err := reg(uint64(op - opBreg0))
			if err != nil {
				return 0, err
			}
			st = append(st, v+uint64(in.sleb()))
			continue
		}
		switch op {
		case opAddr, opConst8u, opConst8s:
			st = append(st, in.u64())
		case opConst1u:
			st = append(st, uint64(in.u8()))
		case opConst1s:
			st = append(st, uint64(int64(int8(in.u8()))))
		case opConst2u:
			st = append(st, uint64(in.u16()))
		case opConst2s:
			st = append(st, uint64(int64(int16(in.u16()))))
		case opConst4u:
			st = append(st, uint64(in.u32()))
		case opConst4s:
			st = append(st, uint64(int64(int32(in.u32()))))
		case opConstu:
			st = append(st, in.uleb())
		case opConsts:
			st = append(st, uint64(in.sleb()))
		case opRegx:
			v, err := reg(in.uleb())
			if err != nil {
				return 0, err
			}
			st = append(st, v)
		case opBregx:
			v, err := reg(in.uleb())
			if err != nil {
				return 0, err
			}
			st = append(st, v+uint64(in.sleb()))
		case opDup, opOver, opPick:
			i := 0
			if op == opOver {
				i = 1
			} else if op == opPick {
				i = int(in.u8())
			}
			if i >= len(st) {
				return 0, fmt.Errorf("%w: stack underflow", errExpr)
			}
			st = append(st, st[len(st)-1-i])
		case opDrop:
			if _, err := pop(); err != nil {
				return 0, err
			}
		case opSwap:
			if len(st) < 2 {
				return 0, fmt.Errorf("%w: stack underflow", errExpr)
			}
			st[len(st)-1], st[len(st)-2] = st[len(st)-2], st[len(st)-1]
		case opRot:
			if len(st) < 3 {
				return 0, fmt.Errorf("%w: stack underflow", errExpr)
			}
			n := len(st)
			st[n-1], st[n-2], st[n-3] = st[n-2], st[n-3], st[n-1]
		case opDeref, opDerefSize:
			size := 8
			if op == opDerefSize {
				size = int(in.u8())
			}
			a, err := pop()
			if err != nil {
				return 0, err
			}
			v, err := mem.read64(a)
			if err != nil {
				return 0, err
			}
			if size < 8 && size > 0 {
				v &= 1<<(8*uint(size)) - 1
			}
			st = append(st, v)
		case opAbs, opNeg, opNot:
			a, err := pop()
			if err != nil {
				return 0, err
			}
			switch op {
			case opAbs:
				if int64(a) < 0 {
					a = -a
				}
			case opNeg:
				a = -a
			case opNot:
				a = ^a
			}
			st = append(st, a)
		case opPlusUconst:
			a, err := pop()
			if err != nil {
				return 0, err
			}
			st = append(st, a+in.uleb())
		case opAnd, opDiv, opMinus, opMod, opMul, opOr, opPlus, opShl, opShr, opShra, opXor,
			opEq, opGe, opGt, opLe, opLt, opNe:
			b, err := pop()
			if err != nil {
				return 0, err
			}
			a, err := pop()
			if err != nil {
				return 0, err
			}
			v, err := binop(op, a, b)
			if err != nil {
				return 0, err
			}
			st = append(st, v)
		case opSkip, opBra:
			off := int(int16(in.u16()))
			if op == opBra {
				c, err := pop()
				if err != nil {
					return 0, err
				}
				if c == 0 {
					continue
				}
			}
			if in.pos+off < 0 || in.pos+off > len(in.b) {
				return 0, fmt.Errorf("%w: branch out of the expression", errExpr)
			}
			in.pos += off
		case opNop:
		default:
			return 0, fmt.Errorf("%w: operation %#x not supported in call frame information", errExpr, op)
		}
		if in.err {
			return 0, fmt.Errorf("%w: truncated", errExpr)
		}
	}
	return pop()
}

func binop(op byte, a, b uint64) (uint64, error) {
	cmp := func(c bool) uint64 {
		if c {
			return 1
		}
		return 0
	}
	sa, sb := int64(a), int64(b)
	switch op {
	case opAnd:
		return a & b, nil
	case opDiv:
		if b == 0 || (sa == -1<<63 && sb == -1) {
			return 0, fmt.Errorf("%w: division by zero", errExpr)
		}
		return uint64(sa / sb), nil
	case opMinus:
		return a - b, nil
	case opMod:
		if b == 0 {
			return 0, fmt.Errorf("%w: division by zero", errExpr)
		}
		return a % b, nil
	case opMul:
		return a * b, nil
	case opOr:
		return a | b, nil
	case opPlus:
		return a + b, nil
	case opShl:
		return a << (b & 63), nil
	case opShr:
		return a >> (b & 63), nil
	case opShra:
		return uint64(sa >> (b & 63)), nil
	case opXor:
		return a ^ b, nil
	case opEq:
		return cmp(sa == sb), nil
	case opGe:
		return cmp(sa >= sb), nil
	case opGt:
		return cmp(sa > sb), nil
	case opLe:
		return cmp(sa <= sb), nil
	case opLt:
		return cmp(sa < sb), nil
	default:
		return cmp(sa != sb), nil
	}
}
