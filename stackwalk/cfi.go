package stackwalk

import (
	"errors"
	"fmt"
	"sort"
)

// The call frame information of one module: the CIEs and FDEs of its
// .eh_frame and .debug_frame, the FDEs sorted by start address so that a
// pc's FDE is a binary search away. Parsed once per module, before any
// process is stopped; only the rows of the FDEs a walk meets are computed
// while a process is stopped.

// cie is a Common Information Entry: what the FDEs that point at it share.
type cie struct {
	codeAlign uint64
	dataAlign int64
	raReg     uint64
	fdeEnc    byte // pointer encoding of the FDEs' addresses (eh_frame 'R')
	hasAug    bool // 'z': FDEs carry an augmentation data length
	signal    bool // 'S': FDEs of this CIE describe a signal trampoline
	addrSize  int
	initial   []byte // the initial instructions
}

// fde is a Frame Description Entry: the unwind rules for [begin, end),
// addresses as the module links them (before its load bias).
type fde struct {
	begin, end uint64
	cie        *cie
	insns      []byte
}

// cfiTable holds a module's FDEs sorted by begin, without duplicates.
type cfiTable struct {
	fdes []fde
}

// errCFI marks malformed call frame information.
var errCFI = errors.New("malformed call frame information")

// Pointer encodings (DW_EH_PE_*) used by .eh_frame.
const (
	peAbsptr  = 0x00
	peUleb128 = 0x01
	peUdata2  = 0x02
	peUdata4  = 0x03
	peUdata8  = 0x04
	peSleb128 = 0x09
	peSdata2  = 0x0a
	peSdata4  = 0x0b
	peSdata8  = 0x0c
	pePcrel   = 0x10
	peAligned = 0x50
	peIndir   = 0x80
	peOmit    = 0xff
)

// parseCFI parses one .eh_frame (ehFrame true) or .debug_frame section
// whose first byte is at address addr. Entries that cannot be read are
// skipped when their length allows it; the FDEs read so far are returned
// with an error when it does not, so that one bad entry costs only itself.
func parseCFI(data []byte, addr uint64, ehFrame bool) ([]fde, error) {
	cies := map[uint64]*cie{}
	var fdes []fde
	for off := 0; off < len(data); {
		r := &reader{b: data, pos: off}
		length := uint64(r.u32())
		is64 := false
		if length == 0xffffffff {
			length = r.u64()
			is64 = true
		}
		if r.err {
			return fdes, fmt.Errorf("%w: entry at offset %#x: truncated length", errCFI, off)
		}
		if length == 0 {
			if ehFrame {
				break // the terminator
			}
			off = r.pos
			continue
		}
		start := r.pos
		if length > uint64(len(data)-start) {
			return fdes, fmt.Errorf("%w: entry at offset %#x: length %d past the section's end", errCFI, off, length)
		}
		end := start + int(length)
		r.b = data[:end]
		idPos := r.pos
		var id uint64
		if is64 {
			id = r.u64()
		} else {
			id = uint64(r.u32())
		}
		isCIE := (ehFrame && id == 0) || (!ehFrame && (id == 0xffffffff || id == 0xffffffffffffffff))
		if isCIE {
			if c, err := parseCIE(r, ehFrame); err == nil {
				cies[uint64(off)] = c
			}
		} else {
			cieOff := id
			if ehFrame {
				cieOff = uint64(idPos) - id
			}
			c := cies[cieOff]
			if c == nil {
				// A CIE after its FDE: legal in .debug_frame.
				if cc, err := cieAt(data, cieOff, ehFrame); err == nil {
					c = cc
					cies[cieOff] = cc
				}
			}
			if c != nil {
				if f, ok := parseFDE(r, c, addr, ehFrame); ok {
					fdes = append(fdes, f)
				}
			}
		}
		off = end
	}
	return fdes, nil
}

// cieAt parses the CIE at offset off of the section.
func cieAt(data []byte, off uint64, ehFrame bool) (*cie, error) {
	if off >= uint64(len(data)) {
		return nil, errCFI
	}
	r := &reader{b: data, pos: int(off)}
	length := uint64(r.u32())
	is64 := length == 0xffffffff
	if is64 {
		length = r.u64()
	}
	if r.err || length > uint64(len(data)-r.pos) {
		return nil, errCFI
	}
	r.b = data[:r.pos+int(length)]
	var id uint64
	if is64 {
		id = r.u64()
	} else {
		id = uint64(r.u32())
	}
	if (ehFrame && id != 0) || (!ehFrame && id != 0xffffffff && id != 0xffffffffffffffff) {
		return nil, errCFI
	}
	return parseCIE(r, ehFrame)
}

// parseCIE reads a CIE's fields after its id; r ends at the entry's end.
func parseCIE(r *reader, ehFrame bool) (*cie, error) {
	c := &cie{addrSize: 8, fdeEnc: peAbsptr}
	version := r.u8()
	if version != 1 && version != 3 && version != 4 {
		return nil, fmt.Errorf("%w: CIE version %d", errCFI, version)
	}
	aug := r.cstring()
	if version == 4 {
		c.addrSize = int(r.u8())
		r.u8() // segment selector size
		if c.addrSize != 4 && c.addrSize != 8 {
			return nil, fmt.Errorf("%w: address size %d", errCFI, c.addrSize)
		}
	}
	c.codeAlign = r.uleb()
	c.dataAlign = r.sleb()
	if version == 1 {
		c.raReg = uint64(r.u8())
	} else {
		c.raReg = r.uleb()
	}
	if len(aug) > 0 && aug[0] == 'z' {
		c.hasAug = true
		n := r.uleb()
		augEnd := r.pos + int(n)
		if n > uint64(len(r.b)-r.pos) {
			return nil, fmt.Errorf("%w: augmentation data past the CIE's end", errCFI)
		}
		for _, a := range aug[1:] {
			switch a {
			case 'L':
				r.u8()
			case 'R':
				c.fdeEnc = r.u8()
			case 'P':
				enc := r.u8()
				r.encoded(enc&^peIndir, 0, ehFrame)
			case 'S':
				c.signal = true
			}
		}
		r.pos = augEnd
	} else if len(aug) > 0 && aug != "eh" {
		// An augmentation without 'z' whose data we cannot skip.
		return nil, fmt.Errorf("%w: augmentation %q", errCFI, aug)
	} else if aug == "eh" {
		r.u64() // the old GCC exception table pointer
	}
	if r.err {
		return nil, fmt.Errorf("%w: truncated CIE", errCFI)
	}
	c.initial = r.b[r.pos:]
	return c, nil
}

// parseFDE reads an FDE's fields after its CIE pointer.
func parseFDE(r *reader, c *cie, addr uint64, ehFrame bool) (fde, bool) {
	var begin, size uint64
	if ehFrame {
		begin = r.encoded(c.fdeEnc, addr, true)
		size = r.encoded(c.fdeEnc&0x0f, 0, true)
	} else if c.addrSize == 4 {
		begin, size = uint64(r.u32()), uint64(r.u32())
	} else {
		begin, size = r.u64(), r.u64()
	}
	if c.hasAug {
		n := r.uleb()
		if n > uint64(len(r.b)-r.pos) {
			return fde{}, false
		}
		r.pos += int(n)
	}
	if r.err || begin+size < begin {
		return fde{}, false
	}
	return fde{begin: begin, end: begin + size, cie: c, insns: r.b[r.pos:]}, true
}

// newCFITable sorts the FDEs of a module's sections (given in order of
// preference) by address; of two FDEs that start at the same address the
// first given wins, so .eh_frame is preferred over .debug_frame.
func newCFITable(sections ...[]fde) *cfiTable {
	var all []fde
	for _, s := range sections {
		all = append(all, s...)
	}
	sort.SliceStable(all, func(i, j int) bool { return all[i].begin < all[j].begin })
	out := all[:0]
	for i, f := range all {
		if f.end <= f.begin || (i > 0 && len(out) > 0 && out[len(out)-1].begin == f.begin) {
			continue
		}
		out = append(out, f)
	}
	return &cfiTable{fdes: out}
}

// find returns the FDE covering pc (a link-time address), or nil.
func (t *cfiTable) find(pc uint64) *fde {
	if t == nil {
		return nil
	}
	i := sort.Search(len(t.fdes), func(i int) bool { return t.fdes[i].begin > pc })
	// An FDE nested in a longer one before it (rare, but legal) is found
	// by looking back a few entries.
	for j := i - 1; j >= 0 && j >= i-4; j-- {
		if f := &t.fdes[j]; pc >= f.begin && pc < f.end {
			return f
		}
	}
	return nil
}
