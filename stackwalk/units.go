package stackwalk

import (
	"debug/dwarf"
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"sort"
	"strings"
)

// A module's DWARF is read one compile unit at a time when it can be:
// debug/elf's DWARF() parses the header of every unit before the first
// answer, where a stack needs the few units that hold its frames.
// .debug_aranges says which unit holds a pc, and each unit becomes a
// dwarf.Data of its own. The sections' bytes are the mapped file's, or,
// compressed, inflated once per host (module.section).
//
// That holds while a unit's entries refer only to entries of the same
// unit: the abbreviations are checked for forms that reach into other
// units or other files (DW_FORM_ref_addr, dwz's alternate files), and a
// module that uses them is read whole, as are modules without
// .debug_aranges and the old .zdebug sections.

// unitSource gives the dwarf.Data that holds the compile unit at offset
// off of .debug_info, and the unit's offset in it.
type unitSource interface {
	unit(off dwarf.Offset) (*dwarf.Data, dwarf.Offset, error)
}

// whole is a module's DWARF read at once.
type whole struct{ d *dwarf.Data }

func (w whole) unit(off dwarf.Offset) (*dwarf.Data, dwarf.Offset, error) { return w.d, off, nil }

// sectionFunc gives a section's bytes.
type sectionFunc func(*elf.Section) ([]byte, error)

// perUnit reads compile units one at a time (see above).
type perUnit struct {
	order  binary.ByteOrder
	info   []byte
	line   []byte // nil without a line table
	abbrev []byte
	ranges []byte            // DWARF 4's .debug_ranges
	str    []byte            // .debug_str
	extra  map[string][]byte // the DWARF 5 sections dwarf.Data.AddSection takes
}

// wholeUnits reads every compile unit of f and their ranges, as
// DWARF() does.
func wholeUnits(f *elf.File, section sectionFunc) (unitSource, []cuRange, error) {
	d, err := wholeDWARF(f, section)
	if err != nil {
		return nil, nil, err
	}
	var cus []cuRange
	r := d.Reader()
	for {
		e, err := r.Next()
		if err != nil || e == nil {
			break
		}
		if e.Tag == dwarf.TagCompileUnit || e.Tag == dwarf.TagPartialUnit {
			if rs, err := d.Ranges(e); err == nil {
				for _, rg := range rs {
					if rg[1] > rg[0] {
						cus = append(cus, cuRange{rg[0], rg[1], e.Offset})
					}
				}
			}
		}
		r.SkipChildren()
	}
	return whole{d}, cus, nil
}

// wholeDWARF is f's DWARF from the sections' bytes as section gives them;
// the old .zdebug sections are debug/elf's to inflate.
func wholeDWARF(f *elf.File, section sectionFunc) (*dwarf.Data, error) {
	for _, s := range f.Sections {
		if strings.HasPrefix(s.Name, ".zdebug") {
			return f.DWARF()
		}
	}
	get := func(name string) ([]byte, error) {
		s := f.Section(name)
		if s == nil || s.Type == elf.SHT_NOBITS {
			return nil, nil
		}
		return section(s)
	}
	var b [8][]byte
	for i, name := range []string{".debug_abbrev", ".debug_aranges", ".debug_frame", ".debug_info", ".debug_line", ".debug_pubnames", ".debug_ranges", ".debug_str"} {
		var err error
		if b[i], err = get(name); err != nil {
			return nil, err
		}
	}
	d, err := dwarf.New(b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7])
	if err != nil {
		return nil, err
	}
	for _, name := range []string{".debug_addr", ".debug_line_str", ".debug_str_offsets", ".debug_rnglists", ".debug_types"} {
		if b, err := get(name); err == nil && b != nil {
			if err := d.AddSection(name, b); err != nil {
				return nil, err
			}
		}
	}
	return d, nil
}

// unitsOf reads f's DWARF one compile unit at a time when f allows it
// (see above), else whole.
func unitsOf(f *elf.File, section sectionFunc, keep rangesKeeper) (unitSource, []cuRange, error) {
	if src, cus, err := splitUnits(f, section, keep); err == nil {
		return src, cus, nil
	}
	return wholeUnits(f, section)
}

// errWhole says why a module's DWARF must be read whole.
var errWhole = errors.New("read whole")

// splitUnits prepares f's DWARF for reading per unit, or returns errWhole.
func splitUnits(f *elf.File, section sectionFunc, keep rangesKeeper) (*perUnit, []cuRange, error) {
	for _, s := range f.Sections {
		if strings.HasPrefix(s.Name, ".zdebug") || s.Name == ".gnu_debugaltlink" || s.Name == ".debug_sup" {
			return nil, nil, errWhole
		}
	}
	data := func(name string) ([]byte, error) {
		s := f.Section(name)
		if s == nil || s.Type == elf.SHT_NOBITS {
			return nil, nil
		}
		return section(s)
	}
	if keep == nil {
		keep = func(build func() ([]cuRange, error)) ([]cuRange, error) { return build() }
	}
	cus, err := keep(func() ([]cuRange, error) { return unitRanges(f, data) })
	if err != nil || len(cus) == 0 {
		return nil, nil, errWhole
	}
	p := &perUnit{order: f.ByteOrder, extra: map[string][]byte{}}
	if p.abbrev, err = data(".debug_abbrev"); err != nil || len(p.abbrev) == 0 {
		return nil, nil, errWhole
	}
	if p.info, err = data(".debug_info"); err != nil || p.info == nil {
		return nil, nil, errWhole
	}
	if p.line, err = data(".debug_line"); err != nil {
		p.line = nil // no line table: functions without lines
	}
	if p.ranges, err = data(".debug_ranges"); err != nil {
		return nil, nil, errWhole
	}
	if p.str, err = data(".debug_str"); err != nil {
		return nil, nil, errWhole
	}
	// .debug_loclists is left out: locations are not looked at.
	for _, name := range []string{".debug_addr", ".debug_line_str", ".debug_str_offsets", ".debug_rnglists"} {
		b, err := data(name)
		if err != nil {
			return nil, nil, errWhole
		}
		if b != nil {
			p.extra[name] = b
		}
	}
	return p, cus, nil
}

// rangesKeeper gives the units' ranges that build reads, or a copy kept
// from an earlier read (the host's cache).
type rangesKeeper func(build func() ([]cuRange, error)) ([]cuRange, error)

// unitRanges reads the units' ranges from .debug_aranges, sorted, once it
// has checked that the units can be read one at a time: errWhole if not.
// Both read a whole section (libc's abbreviations are a megabyte), which
// is why their answer is kept.
func unitRanges(f *elf.File, data func(string) ([]byte, error)) ([]cuRange, error) {
	aranges, err := data(".debug_aranges")
	if err != nil || len(aranges) == 0 {
		return nil, errWhole
	}
	cus, err := parseAranges(aranges, f.ByteOrder)
	if err != nil || len(cus) == 0 {
		return nil, errWhole
	}
	if abbrev, err := data(".debug_abbrev"); err != nil || len(abbrev) == 0 || crossUnitForms(abbrev) {
		return nil, errWhole
	}
	return cus, nil
}

func (p *perUnit) unit(off dwarf.Offset) (*dwarf.Data, dwarf.Offset, error) {
	start := uint64(off)
	end, err := unitEnd(p.info, p.order, start)
	if err != nil {
		return nil, 0, fmt.Errorf(".debug_info: %w", err)
	}
	info := p.info
	var line []byte
	if p.line != nil {
		if line, err = p.lineProgram(info[start:end]); err != nil {
			return nil, 0, err
		}
	}
	d, err := p.data(info[start:end], line)
	if err != nil {
		return nil, 0, err
	}
	return d, 0, nil
}

// lineProgram returns .debug_line read through the end of the line
// program of the unit info holds: the unit's entry says where it starts.
func (p *perUnit) lineProgram(info []byte) ([]byte, error) {
	d, err := p.data(info, nil)
	if err != nil {
		return nil, err
	}
	cu, err := d.Reader().Next()
	if err != nil || cu == nil {
		return nil, err
	}
	off, ok := cu.Val(dwarf.AttrStmtList).(int64)
	if !ok || off < 0 {
		return nil, nil // no line table
	}
	end, err := unitEnd(p.line, p.order, uint64(off))
	if err != nil {
		return nil, fmt.Errorf(".debug_line: %w", err)
	}
	return p.line[:end], nil
}

// unitEnd reads the length of the unit (of .debug_info or .debug_line)
// at start in sec, and returns the offset of its end, within the section.
func unitEnd(sec []byte, order binary.ByteOrder, start uint64) (uint64, error) {
	size := uint64(len(sec))
	if start > size || size-start < 4 {
		return 0, fmt.Errorf("no unit at %#x", start)
	}
	length, hdr := uint64(order.Uint32(sec[start:])), uint64(4)
	if length == 0xffffffff {
		if size-start < 12 {
			return 0, fmt.Errorf("unit at %#x: truncated header", start)
		}
		length, hdr = order.Uint64(sec[start+4:]), 12
	}
	if length > size-start-hdr {
		return 0, fmt.Errorf("unit at %#x: %d bytes, beyond the section's end", start, length)
	}
	return start + hdr + length, nil
}

// data is the dwarf.Data of one unit's entries and the line table line.
func (p *perUnit) data(info, line []byte) (*dwarf.Data, error) {
	d, err := dwarf.New(p.abbrev, nil, nil, info, line, nil, p.ranges, p.str)
	if err != nil {
		return nil, err
	}
	for name, b := range p.extra {
		if err := d.AddSection(name, b); err != nil {
			return nil, err
		}
	}
	return d, nil
}

// parseAranges reads .debug_aranges: the address ranges of each compile
// unit, sorted by address.
func parseAranges(b []byte, order binary.ByteOrder) ([]cuRange, error) {
	var cus []cuRange
	for len(b) > 0 {
		if len(b) < 4 {
			return nil, errors.New("aranges: truncated header")
		}
		length, hdr, wide := uint64(order.Uint32(b)), 4, false
		if length == 0xffffffff {
			if len(b) < 12 {
				return nil, errors.New("aranges: truncated header")
			}
			length, hdr, wide = order.Uint64(b[4:]), 12, true
		}
		if length > uint64(len(b)-hdr) {
			return nil, errors.New("aranges: set beyond the section")
		}
		set := b[hdr : hdr+int(length)]
		b = b[hdr+int(length):]
		// version (2), debug_info offset (4 or 8), address size (1),
		// segment selector size (1).
		offLen := 4
		if wide {
			offLen = 8
		}
		if len(set) < 2+offLen+2 {
			return nil, errors.New("aranges: truncated set")
		}
		var cu uint64
		if wide {
			cu = order.Uint64(set[2:])
		} else {
			cu = uint64(order.Uint32(set[2:]))
		}
		addrSize, segSize := int(set[2+offLen]), int(set[3+offLen])
		if addrSize != 8 && addrSize != 4 || segSize != 0 {
			return nil, errors.New("aranges: unsupported address or segment size")
		}
		// The tuples start at a multiple of their size from the set's start.
		at := hdr + 2 + offLen + 2
		tuple := 2 * addrSize
		at = (at + tuple - 1) / tuple * tuple
		for p := at - hdr; p+tuple <= len(set); p += tuple {
			addr, size := uint64(0), uint64(0)
			if addrSize == 8 {
				addr, size = order.Uint64(set[p:]), order.Uint64(set[p+8:])
			} else {
				addr, size = uint64(order.Uint32(set[p:])), uint64(order.Uint32(set[p+4:]))
			}
			if addr == 0 && size == 0 {
				break
			}
			if size > 0 {
				cus = append(cus, cuRange{addr, addr + size, dwarf.Offset(cu)})
			}
		}
	}
	sort.Slice(cus, func(i, j int) bool { return cus[i].low < cus[j].low })
	return cus, nil
}

// crossUnitForms reports abbreviations with a form that refers outside
// its unit (DW_FORM_ref_addr, DW_FORM_ref_sup4/8, dwz's GNU_ref_alt and
// GNU_strp_alt) or that says its form only in the entry
// (DW_FORM_indirect), or abbreviations it cannot parse.
func crossUnitForms(b []byte) bool {
	const (
		formRefAddr      = 0x10
		formIndirect     = 0x16
		formRefSup4      = 0x1c
		formImplicitCons = 0x21
		formRefSup8      = 0x24
		formGNURefAlt    = 0x1f20
		formGNUStrpAlt   = 0x1f21
	)
	for len(b) > 0 {
		code, ok := uleb(&b)
		if !ok {
			return true
		}
		if code == 0 {
			continue // the end of a unit's table
		}
		if _, ok := uleb(&b); !ok || len(b) == 0 { // the tag
			return true
		}
		b = b[1:] // has children
		for {
			attr, ok1 := uleb(&b)
			form, ok2 := uleb(&b)
			if !ok1 || !ok2 {
				return true
			}
			if attr == 0 && form == 0 {
				break
			}
			switch form {
			case formRefAddr, formIndirect, formRefSup4, formRefSup8, formGNURefAlt, formGNUStrpAlt:
				return true
			case formImplicitCons:
				if _, ok := uleb(&b); !ok { // a signed LEB128: the same bytes
					return true
				}
			}
		}
	}
	return false
}

// uleb reads an unsigned LEB128 from the front of *b.
func uleb(b *[]byte) (uint64, bool) {
	var v uint64
	for i, c := range *b {
		if i == 10 {
			return 0, false
		}
		v |= uint64(c&0x7f) << (7 * i)
		if c&0x80 == 0 {
			*b = (*b)[i+1:]
			return v, true
		}
	}
	return 0, false
}
