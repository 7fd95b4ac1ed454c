package wire

import (
	"encoding/binary"
	"fmt"
)

// checkBounds walks the first msgpack value in b and checks every length it
// declares (strings, binaries, extensions, element counts of arrays and
// maps) against the bytes that are left, before anything is allocated for
// it: the msgpack decoder sizes a binary by its declared length, so an
// 11-byte frame announcing 4 GiB would otherwise cost 4 GiB. It returns the
// size of the value. Since every element takes at least one byte, counting
// the elements still owed bounds nesting too, without recursion.
func checkBounds(b []byte) (int, error) {
	pos := 0
	owed := 1 // values still to read
	for owed > 0 {
		if pos >= len(b) {
			return 0, fmt.Errorf("%w: cut short at byte %d", ErrMessage, pos)
		}
		c := b[pos]
		pos++
		owed--
		var size, count int // payload bytes to skip; elements to read
		var err error
		switch {
		case c <= 0x7f || c >= 0xe0: // fixint
		case c <= 0x8f: // fixmap
			count = 2 * int(c&0x0f)
		case c <= 0x9f: // fixarray
			count = int(c & 0x0f)
		case c <= 0xbf: // fixstr
			size = int(c & 0x1f)
		default:
			size, count, err = boundsOf(c, b, &pos)
		}
		if err != nil {
			return 0, err
		}
		left := len(b) - pos
		if size > left || count > left || owed+count > left {
			return 0, fmt.Errorf("%w: byte %d announces more than the %d bytes left", ErrMessage, pos, left)
		}
		pos += size
		owed += count
	}
	return pos, nil
}

// boundsOf reads the length that follows code c at *pos (advancing it) and
// says how many payload bytes and how many elements the value has.
func boundsOf(c byte, b []byte, pos *int) (size, count int, err error) {
	length := func(width int) (int, error) {
		if len(b)-*pos < width {
			return 0, fmt.Errorf("%w: length cut short at byte %d", ErrMessage, *pos)
		}
		var n uint64
		switch width {
		case 1:
			n = uint64(b[*pos])
		case 2:
			n = uint64(binary.BigEndian.Uint16(b[*pos:]))
		case 4:
			n = uint64(binary.BigEndian.Uint32(b[*pos:]))
		}
		*pos += width
		return int(n), nil
	}
	switch c {
	case 0xc0, 0xc2, 0xc3: // nil, false, true
		return 0, 0, nil
	case 0xcc, 0xd0: // uint8, int8
		return 1, 0, nil
	case 0xcd, 0xd1:
		return 2, 0, nil
	case 0xca, 0xce, 0xd2: // float32, uint32, int32
		return 4, 0, nil
	case 0xcb, 0xcf, 0xd3:
		return 8, 0, nil
	case 0xd4, 0xd5, 0xd6, 0xd7, 0xd8: // fixext 1..16, plus its type byte
		return 1 + 1<<(c-0xd4), 0, nil
	case 0xc4, 0xd9: // bin8, str8
		size, err = length(1)
	case 0xc5, 0xda:
		size, err = length(2)
	case 0xc6, 0xdb:
		size, err = length(4)
	case 0xc7, 0xc8, 0xc9: // ext8..32, plus its type byte
		size, err = length(1 << (c - 0xc7))
		size++
	case 0xdc:
		count, err = length(2)
	case 0xdd:
		count, err = length(4)
	case 0xde:
		count, err = length(2)
		count *= 2
	case 0xdf:
		count, err = length(4)
		count *= 2
	default: // 0xc1 is never used
		return 0, 0, fmt.Errorf("%w: invalid code 0x%02x at byte %d", ErrMessage, c, *pos-1)
	}
	return size, count, err
}
