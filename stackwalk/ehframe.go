package stackwalk

import (
	"encoding/binary"
	"sort"
	"sync"
)

// cfiSource finds the FDE that covers a link-time pc, or nil.
type cfiSource interface {
	find(pc uint64) *fde
}

// cfiChain looks in first, then in what rest gives, made on first need
// (a module's .debug_frame, which few have and few pcs need).
type cfiChain struct {
	first cfiSource
	once  sync.Once
	rest  func() cfiSource
	more  cfiSource
}

func (c *cfiChain) find(pc uint64) *fde {
	if c.first != nil {
		if f := c.first.find(pc); f != nil {
			return f
		}
	}
	c.once.Do(func() { c.more = c.rest() })
	if c.more == nil {
		return nil
	}
	return c.more.find(pc)
}

// find of a table that is nil finds nothing (a module without CFI).
var _ cfiSource = (*cfiTable)(nil)

// ehIndex finds FDEs of .eh_frame through the binary search table of
// .eh_frame_hdr, which the linker sorts by address: an FDE is read when
// a pc first needs it, instead of the whole section up front (libmpi's
// is half a megabyte, and a rank maps seventy such objects).
type ehIndex struct {
	hdr        []byte // the table: count pairs of (initial location, FDE address)
	count      int
	hdrAddr    uint64
	eh         []byte
	ehAddr     uint64
	mu         sync.Mutex
	cies       map[uint64]*cie
	fdes       map[uint64]*fde
	tableStart int
}

// DW_EH_PE_datarel: relative to the start of .eh_frame_hdr.
const peDatarel = 0x30

// newEHIndex reads the header of .eh_frame_hdr at hdrAddr; nil when the
// table is absent or in an encoding other than the one linkers write
// (signed 4-byte offsets from the header), whose section is then parsed
// whole.
func newEHIndex(hdr []byte, hdrAddr uint64, eh []byte, ehAddr uint64) cfiSource {
	if len(hdr) < 4 || hdr[0] != 1 || eh == nil {
		return nil
	}
	ptrEnc, countEnc, tableEnc := hdr[1], hdr[2], hdr[3]
	if tableEnc != peDatarel|peSdata4 || countEnc == peOmit {
		return nil
	}
	r := &reader{b: hdr, pos: 4}
	r.encoded(ptrEnc, hdrAddr, true) // where .eh_frame is: the section says
	count := r.encoded(countEnc, hdrAddr, true)
	if r.err || count == 0 || count > uint64(len(hdr)-r.pos)/8 {
		return nil
	}
	return &ehIndex{hdr: hdr, count: int(count), hdrAddr: hdrAddr, eh: eh, ehAddr: ehAddr,
		cies: map[uint64]*cie{}, fdes: map[uint64]*fde{}, tableStart: r.pos}
}

// entry is the table's i-th pair, as link-time addresses.
func (x *ehIndex) entry(i int) (loc, fdeAddr uint64) {
	at := x.tableStart + 8*i
	loc = x.hdrAddr + uint64(int64(int32(binary.LittleEndian.Uint32(x.hdr[at:]))))
	fdeAddr = x.hdrAddr + uint64(int64(int32(binary.LittleEndian.Uint32(x.hdr[at+4:]))))
	return loc, fdeAddr
}

func (x *ehIndex) find(pc uint64) *fde {
	i := sort.Search(x.count, func(i int) bool {
		loc, _ := x.entry(i)
		return loc > pc
	})
	if i == 0 {
		return nil
	}
	_, addr := x.entry(i - 1)
	if addr < x.ehAddr || addr-x.ehAddr >= uint64(len(x.eh)) {
		return nil
	}
	f := x.fdeAt(addr - x.ehAddr)
	if f == nil || pc < f.begin || pc >= f.end {
		return nil
	}
	return f
}

// fdeAt parses (once) the FDE at offset off of .eh_frame.
func (x *ehIndex) fdeAt(off uint64) *fde {
	x.mu.Lock()
	defer x.mu.Unlock()
	if f, ok := x.fdes[off]; ok {
		return f
	}
	var f *fde
	defer func() { x.fdes[off] = f }()
	r := &reader{b: x.eh, pos: int(off)}
	length := uint64(r.u32())
	if r.err || length == 0 || length == 0xffffffff || length > uint64(len(x.eh)-r.pos) {
		return nil
	}
	r.b = x.eh[:r.pos+int(length)]
	idPos := r.pos
	id := uint64(r.u32())
	if r.err || id == 0 || id > uint64(idPos) {
		return nil // a CIE, or garbage
	}
	cieOff := uint64(idPos) - id
	c, ok := x.cies[cieOff]
	if !ok {
		c, _ = cieAt(x.eh, cieOff, true)
		x.cies[cieOff] = c
	}
	if c == nil {
		return nil
	}
	if parsed, ok := parseFDE(r, c, x.ehAddr, true); ok {
		f = &parsed
	}
	return f
}
