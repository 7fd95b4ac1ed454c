package stackwalk

import "encoding/binary"

// reader reads the little-endian encodings of DWARF and .eh_frame from a
// byte slice. A read past the end sets err and yields zero: callers check
// err once after a group of reads instead of after each.
type reader struct {
	b   []byte
	pos int
	err bool
}

func (r *reader) take(n int) []byte {
	if n < 0 || r.pos+n > len(r.b) || r.pos+n < r.pos {
		r.err = true
		r.pos = len(r.b)
		return nil
	}
	s := r.b[r.pos : r.pos+n]
	r.pos += n
	return s
}

func (r *reader) u8() byte {
	if s := r.take(1); s != nil {
		return s[0]
	}
	return 0
}

func (r *reader) u16() uint16 {
	if s := r.take(2); s != nil {
		return binary.LittleEndian.Uint16(s)
	}
	return 0
}

func (r *reader) u32() uint32 {
	if s := r.take(4); s != nil {
		return binary.LittleEndian.Uint32(s)
	}
	return 0
}

func (r *reader) u64() uint64 {
	if s := r.take(8); s != nil {
		return binary.LittleEndian.Uint64(s)
	}
	return 0
}

func (r *reader) uleb() uint64 {
	var v uint64
	for shift := uint(0); ; shift += 7 {
		b := r.u8()
		if r.err {
			return 0
		}
		if shift < 64 {
			v |= uint64(b&0x7f) << shift
		}
		if b&0x80 == 0 {
			return v
		}
	}
}

func (r *reader) sleb() int64 {
	var v int64
	var shift uint
	var b byte
	for {
		b = r.u8()
		if r.err {
			return 0
		}
		if shift < 64 {
			v |= int64(b&0x7f) << shift
		}
		shift += 7
		if b&0x80 == 0 {
			break
		}
	}
	if shift < 64 && b&0x40 != 0 {
		v |= -1 << shift
	}
	return v
}

func (r *reader) cstring() string {
	for i := r.pos; i < len(r.b); i++ {
		if r.b[i] == 0 {
			s := string(r.b[r.pos:i])
			r.pos = i + 1
			return s
		}
	}
	r.err = true
	r.pos = len(r.b)
	return ""
}

// encoded reads a pointer in .eh_frame encoding enc; sect is the address
// of the section's first byte, for pc-relative values. Indirect pointers
// and bases other than the pc are not used on amd64 for what unwinding
// reads, and mark the reader failed.
func (r *reader) encoded(enc byte, sect uint64, ehFrame bool) uint64 {
	if enc == peOmit {
		return 0
	}
	here := sect + uint64(r.pos)
	if enc&0x70 == peAligned {
		for r.pos%8 != 0 {
			r.pos++
		}
		return r.u64()
	}
	var v uint64
	switch enc & 0x0f {
	case peAbsptr, peUdata8, peSdata8:
		v = r.u64()
	case peUleb128:
		v = r.uleb()
	case peUdata2:
		v = uint64(r.u16())
	case peUdata4:
		v = uint64(r.u32())
	case peSleb128:
		v = uint64(r.sleb())
	case peSdata2:
		v = uint64(int64(int16(r.u16())))
	case peSdata4:
		v = uint64(int64(int32(r.u32())))
	default:
		r.err = true
		return 0
	}
	switch enc & 0x70 {
	case 0:
	case pePcrel:
		v += here
	default:
		r.err = true
	}
	if enc&peIndir != 0 {
		r.err = true
	}
	return v
}
