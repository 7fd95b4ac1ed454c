package stackwalk

import "sort"

// segment is an executable mapping of a module in one process.
type segment struct {
	mapping
	bias     uint64
	mod      *module
	path     string
	resolved bool // the module's headers read, the bias known
}

// space is a process's executable mappings, sorted by address.
type space []segment

// find returns the segment that holds pc, its module's headers read.
func (s space) find(pc uint64) *segment {
	i := sort.Search(len(s), func(i int) bool { return s[i].end > pc })
	if i < len(s) && pc >= s[i].start {
		seg := &s[i]
		if !seg.resolved {
			seg.resolved = true
			if seg.mod.header() {
				seg.bias, _ = seg.mod.bias(seg.mapping)
			}
		}
		return seg
	}
	return nil
}

// rawFrame is one frame as the walk found it: pc is what the frame shows
// (the return address for a caller), lookup the address its code and
// source are looked up at (the return address less one, inside the call).
type rawFrame struct {
	pc, lookup uint64
	seg        *segment
	unknown    bool // the walk stopped here without knowing the caller: "??"
}

// maxFrames bounds a walk through a corrupt stack.
const maxFrames = 512

// walk unwinds one stopped thread. Each frame's caller comes from the CFI
// row at its lookup address; a function without CFI is walked past only
// when its code shows it keeps a frame pointer (checked fallback);
// otherwise the stack ends with a "??" frame.
func walk(regs registers, sp space, mem memReader) []rawFrame {
	var frames []rawFrame
	pc, _ := regs.get(regRA)
	lookup := pc // frame 0 and a frame a signal interrupted: the pc itself
	for len(frames) < maxFrames {
		seg := sp.find(lookup)
		frames = append(frames, rawFrame{pc: pc, lookup: lookup, seg: seg})
		if seg == nil || seg.mod.err != nil {
			return append(frames, rawFrame{unknown: true})
		}
		next, signal, ok := step(regs, seg, lookup, mem)
		if !ok {
			next, ok = framePointerStep(regs, seg, lookup, sp, mem)
			if !ok {
				return append(frames, rawFrame{unknown: true})
			}
		}
		if signal {
			// A signal trampoline: its code starts at the return address
			// the handler was given (its FDE begins a byte early so that
			// return address - 1 finds it); name it from there.
			frames[len(frames)-1].lookup = pc
		}
		npc, known := next.get(regRA)
		if !known || npc == 0 {
			return frames // the outermost frame
		}
		osp, _ := regs.get(regRSP)
		nsp, _ := next.get(regRSP)
		if nsp < osp || (nsp == osp && npc == pc) {
			// A caller's stack pointer below its callee's, or no progress:
			// the stack is corrupt from here on.
			return append(frames, rawFrame{unknown: true})
		}
		regs, pc = next, npc
		lookup = pc - 1
		if signal {
			lookup = pc
		}
	}
	return frames
}

// step computes the caller's registers from the CFI row at lookup. signal
// reports a signal trampoline's frame, whose caller's pc is exact.
func step(regs registers, seg *segment, lookup uint64, mem memReader) (next registers, signal, ok bool) {
	f := seg.mod.frames().find(lookup - seg.bias)
	if f == nil {
		return next, false, false
	}
	r, err := f.rowAt(lookup - seg.bias)
	if err != nil {
		return next, false, false
	}
	var cfa uint64
	if r.cfaExpr != nil {
		if cfa, err = evalExpr(r.cfaExpr, &regs, mem); err != nil {
			return next, false, false
		}
	} else {
		v, ok := regs.get(r.cfaReg)
		if !ok {
			return next, false, false
		}
		cfa = v + uint64(r.cfaOff)
	}
	ra := f.cie.raReg
	if ra >= numRegs || r.regs[ra].kind == ruleUndefined {
		next.set(regRSP, cfa)
		return next, f.cie.signal, true // no return address: the outermost frame
	}
	for reg := uint64(0); reg < numRegs; reg++ {
		ru := r.regs[reg]
		var v uint64
		switch ru.kind {
		case ruleSame:
			var known bool
			if v, known = regs.get(reg); !known {
				continue
			}
			if reg == regRA && reg != ra {
				continue
			}
		case ruleUndefined:
			continue
		case ruleOffset:
			if v, err = mem.read64(cfa + uint64(ru.off)); err != nil {
				return next, false, false
			}
		case ruleValOffset:
			v = cfa + uint64(ru.off)
		case ruleRegister:
			var known bool
			if v, known = regs.get(ru.reg); !known {
				continue
			}
		case ruleExpr, ruleValExpr:
			if v, err = evalExpr(ru.expr, &regs, mem, cfa); err != nil {
				return next, false, false
			}
			if ru.kind == ruleExpr {
				if v, err = mem.read64(v); err != nil {
					return next, false, false
				}
			}
		}
		next.set(reg, v)
	}
	if r.regs[regRSP].kind == ruleSame {
		next.set(regRSP, cfa) // the caller's stack pointer is the CFA unless a rule says otherwise
	}
	if ra != regRA {
		v, _ := next.get(ra)
		next.set(regRA, v)
	}
	return next, f.cie.signal, true
}

// framePointerStep walks past a function without CFI through its frame
// pointer, but only when the function's first instructions are the frame
// pointer prologue (push %rbp; mov %rsp,%rbp, after an optional endbr64)
// and the pc is past them, and the return address lands in mapped code:
// anything less could skip frames without a sign.
func framePointerStep(regs registers, seg *segment, lookup uint64, sp space, mem memReader) (registers, bool) {
	var next registers
	sym, ok := seg.mod.symbols().find(lookup - seg.bias)
	if !ok {
		return next, false
	}
	start := sym.addr + seg.bias
	code, err := mem.read64(start)
	if err != nil {
		return next, false
	}
	b := [8]byte{}
	for i := range b {
		b[i] = byte(code >> (8 * i))
	}
	body := 4 // 55 48 89 e5
	if b[0] == 0xf3 && b[1] == 0x0f && b[2] == 0x1e && b[3] == 0xfa {
		body = 8 // endbr64 first
	}
	p := b[body-4:]
	if p[0] != 0x55 || p[1] != 0x48 || p[2] != 0x89 || p[3] != 0xe5 || lookup < start+uint64(body) {
		return next, false
	}
	rbp, ok := regs.get(regRBP)
	rsp, _ := regs.get(regRSP)
	if !ok || rbp < rsp || rbp%8 != 0 {
		return next, false
	}
	savedRBP, err1 := mem.read64(rbp)
	ra, err2 := mem.read64(rbp + 8)
	if err1 != nil || err2 != nil || sp.find(ra-1) == nil {
		return next, false
	}
	next.set(regRBP, savedRBP)
	next.set(regRSP, rbp+16)
	next.set(regRA, ra)
	return next, true
}
