package stackwalk

import (
	"encoding/binary"
	"errors"
	"testing"
)

// fakeMem answers every read with the address plus one, so that walks of
// fuzzed rules terminate and differ from their input.
type fakeMem struct{}

func (fakeMem) read64(addr uint64) (uint64, error) {
	if addr < 4096 {
		return 0, errors.New("unmapped")
	}
	return addr + 1, nil
}

// exercise parses data as both kinds of section and computes rows and
// expressions from whatever it yields: nothing may panic or loop.
func exercise(data []byte) {
	for _, eh := range []bool{true, false} {
		fdes, _ := parseCFI(data, 0x1000, eh)
		tab := newCFITable(fdes)
		for i, f := range tab.fdes {
			if i > 64 {
				break
			}
			for _, pc := range []uint64{f.begin, f.begin + (f.end-f.begin)/2, f.end - 1} {
				// Overlapping FDEs (never in a linker's output) may hide
				// one another; whatever is found must hold the pc.
				if g := tab.find(pc); g != nil && (pc < g.begin || pc >= g.end) {
					panic("find returned an FDE that does not hold the pc")
				}
				r, err := f.rowAt(pc)
				if err != nil {
					continue
				}
				var regs registers
				for reg := uint64(0); reg < numRegs; reg++ {
					regs.set(reg, 0x10000+reg*8)
				}
				if r.cfaExpr != nil {
					evalExpr(r.cfaExpr, &regs, fakeMem{})
				}
				for _, ru := range r.regs {
					if ru.expr != nil {
						evalExpr(ru.expr, &regs, fakeMem{}, 0x20000)
					}
				}
			}
		}
	}
}

func FuzzParseCFI(f *testing.F) {
	// More seeds live in testdata/fuzz/FuzzParseCFI: real sections.
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) { exercise(data) })
}

// A CIE and an FDE written by hand: the rows at the FDE's start, after its
// push and after its frame pointer setup, as a frame-pointer prologue has.
func TestRows(t *testing.T) {
	var sec []byte
	le32 := func(v uint32) []byte { return binary.LittleEndian.AppendUint32(nil, v) }
	cieBody := []byte{
		1,           // version
		'z', 'R', 0, // augmentation
		1,       // code alignment
		0x78,    // data alignment -8
		16,      // return address register
		1, 0x1b, // augmentation data: FDE pointers pcrel sdata4
		0x0c, 7, 8, // def_cfa rsp+8
		0x90, 1, // offset r16 at cfa-8
	}
	for len(cieBody)%4 != 0 {
		cieBody = append(cieBody, 0)
	}
	sec = append(sec, le32(uint32(4+len(cieBody)))...)
	sec = append(sec, le32(0)...)
	sec = append(sec, cieBody...)
	fdeStart := len(sec)
	insns := []byte{
		0x41,     // advance 1
		0x0e, 16, // def_cfa_offset 16
		0x86, 2, // rbp at cfa-16
		0x43,    // advance 3
		0x0d, 6, // def_cfa_register rbp
	}
	body := append(le32(uint32(fdeStart+4)), nil...) // CIE pointer: back to offset 0
	pcField := 0x1000 + uint64(fdeStart+8)
	body = append(body, le32(uint32(int32(0x2000-int64(pcField))))...)
	body = append(body, le32(0x40)...)
	body = append(body, 0) // no augmentation data
	body = append(body, insns...)
	for len(body)%4 != 0 {
		body = append(body, 0)
	}
	sec = append(sec, le32(uint32(len(body)))...)
	sec = append(sec, body...)
	sec = append(sec, le32(0)...)

	fdes, err := parseCFI(sec, 0x1000, true)
	if err != nil || len(fdes) != 1 {
		t.Fatalf("parse: %d FDEs, %v", len(fdes), err)
	}
	f := &fdes[0]
	if f.begin != 0x2000 || f.end != 0x2040 {
		t.Fatalf("FDE [%#x, %#x), want [0x2000, 0x2040)", f.begin, f.end)
	}
	for _, c := range []struct {
		pc     uint64
		cfaReg uint64
		cfaOff int64
		rbp    ruleKind
	}{{0x2000, regRSP, 8, ruleSame}, {0x2001, regRSP, 16, ruleOffset}, {0x2004, regRBP, 16, ruleOffset}, {0x203f, regRBP, 16, ruleOffset}} {
		r, err := f.rowAt(c.pc)
		if err != nil {
			t.Fatal(err)
		}
		if r.cfaReg != c.cfaReg || r.cfaOff != c.cfaOff || r.regs[regRBP].kind != c.rbp || r.regs[regRA].off != -8 {
			t.Errorf("row at %#x: cfa r%d%+d rbp %v ra %+d; want cfa r%d%+d rbp %v ra -8",
				c.pc, r.cfaReg, r.cfaOff, r.regs[regRBP].kind, r.regs[regRA].off, c.cfaReg, c.cfaOff, c.rbp)
		}
	}
	exercise(sec)
}

// The expression GCC writes for the CFA in a PLT: rsp+8, plus 8 more past
// the eleventh byte of each 16-byte entry.
func TestPLTExpression(t *testing.T) {
	expr := []byte{0x77, 8, 0x80, 0, 0x3f, 0x1a, 0x3b, 0x2a, 0x33, 0x24, 0x22}
	for pc, want := range map[uint64]uint64{0x1000: 0x5008, 0x100a: 0x5008, 0x100b: 0x5010, 0x100f: 0x5010} {
		var regs registers
		regs.set(regRSP, 0x5000)
		regs.set(regRA, pc)
		got, err := evalExpr(expr, &regs, fakeMem{})
		if err != nil || got != want {
			t.Errorf("pc %#x: %#x, %v; want %#x", pc, got, err, want)
		}
	}
	var regs registers
	if _, err := evalExpr(expr, &regs, fakeMem{}); !errors.Is(err, errExpr) {
		t.Errorf("without registers: %v, want errExpr", err)
	}
}
