package stackwalk

import (
	"cmp"
	"debug/elf"
	"encoding/binary"
	"slices"
	"sort"
	"strings"

	"github.com/ianlancetaylor/demangle"
)

// symbol is a function's ELF symbol: [addr, addr+size) at link time.
type symbol struct {
	addr, size uint64
	name       string
	bind       elf.SymBind
}

// symtab is a module's function symbols, sorted by address, one per
// address; the sized ones, and apart from them those without a size
// (hand-written assembly such as glibc's __restore_rt). It is kept in
// the form the host's cache stores (cache.go), records and names in one
// block of bytes, so that a table another server made is used as it lies
// in the page cache, without a copy or a string per symbol:
//
//	"SDMSYMS1" | sized count u32 | unsized count u32 |
//	records (addr u64, size u64, name offset u32, name length u32) | names
type symtab struct {
	b              []byte
	sized, unsized int // how many records of each, the sized first
}

const (
	symMagic  = "SDMSYMS1"
	symHeader = len(symMagic) + 8
	symRecord = 24
)

// parseSymtab checks a table's bytes; a table that does not hold together
// is none.
func parseSymtab(b []byte) (symtab, bool) {
	if len(b) < symHeader || string(b[:len(symMagic)]) != symMagic {
		return symtab{}, false
	}
	sized := int(binary.LittleEndian.Uint32(b[len(symMagic):]))
	unsized := int(binary.LittleEndian.Uint32(b[len(symMagic)+4:]))
	names := symHeader + (sized+unsized)*symRecord
	if sized < 0 || unsized < 0 || sized+unsized > (len(b)-symHeader)/symRecord {
		return symtab{}, false
	}
	t := symtab{b: b, sized: sized, unsized: unsized}
	for i := range sized + unsized {
		off, n := t.nameAt(i)
		if off < names || n > len(b)-off {
			return symtab{}, false
		}
	}
	return t, true
}

// record i's fields.
func (t symtab) addr(i int) uint64 { return binary.LittleEndian.Uint64(t.b[symHeader+i*symRecord:]) }
func (t symtab) size(i int) uint64 { return binary.LittleEndian.Uint64(t.b[symHeader+i*symRecord+8:]) }
func (t symtab) nameAt(i int) (off, n int) {
	at := symHeader + i*symRecord + 16
	return int(binary.LittleEndian.Uint32(t.b[at:])), int(binary.LittleEndian.Uint32(t.b[at+4:]))
}
func (t symtab) symbol(i int) symbol {
	off, n := t.nameAt(i)
	return symbol{addr: t.addr(i), size: t.size(i), name: string(t.b[off : off+n])}
}

// unsizedReach is how far past an unsized symbol's address a pc may be and
// still be named by it: such symbols mark short stubs and trampolines.
const unsizedReach = 256

// newSymtab keeps the sized function symbols of the given tables and picks
// one name per address, the same whatever order the tables list them in:
// a global name over a weak one over a local one (glibc's __GI_ aliases
// are local), then the one with fewer leading underscores, then the
// shorter, then the first in byte order.
func newSymtab(tables ...[]elf.Symbol) symtab {
	var sized, unsized []symbol
	for _, t := range tables {
		for _, e := range t {
			typ := elf.ST_TYPE(e.Info)
			if (typ != elf.STT_FUNC && typ != elf.STT_GNU_IFUNC) || e.Value == 0 || e.Section == elf.SHN_UNDEF {
				continue
			}
			name := e.Name
			if i := strings.IndexByte(name, '@'); i > 0 {
				name = name[:i] // a symbol version
			}
			sym := symbol{addr: e.Value, size: e.Size, name: name, bind: elf.ST_BIND(e.Info)}
			if e.Size == 0 {
				unsized = append(unsized, sym)
			} else {
				sized = append(sized, sym)
			}
		}
	}
	sized, unsized = oneEach(sized), oneEach(unsized)
	n := len(sized) + len(unsized)
	b := make([]byte, symHeader+n*symRecord, symHeader+n*(symRecord+16))
	copy(b, symMagic)
	binary.LittleEndian.PutUint32(b[len(symMagic):], uint32(len(sized)))
	binary.LittleEndian.PutUint32(b[len(symMagic)+4:], uint32(len(unsized)))
	for i, sym := range append(sized, unsized...) {
		at := symHeader + i*symRecord
		binary.LittleEndian.PutUint64(b[at:], sym.addr)
		binary.LittleEndian.PutUint64(b[at+8:], sym.size)
		binary.LittleEndian.PutUint32(b[at+16:], uint32(len(b)))
		binary.LittleEndian.PutUint32(b[at+20:], uint32(len(sym.name)))
		b = append(b, sym.name...)
	}
	return symtab{b: b, sized: len(sized), unsized: len(unsized)}
}

// oneEach sorts symbols by address and keeps the preferred one of each.
func oneEach(s []symbol) []symbol {
	slices.SortFunc(s, func(a, b symbol) int {
		switch {
		case a.addr != b.addr:
			return cmp.Compare(a.addr, b.addr)
		case preferred(a, b):
			return -1
		case preferred(b, a):
			return 1
		}
		return 0
	})
	out := s[:0]
	for _, e := range s {
		if len(out) > 0 && out[len(out)-1].addr == e.addr {
			continue
		}
		out = append(out, e)
	}
	return out
}

// preferred reports whether a's name is chosen over b's at one address.
func preferred(a, b symbol) bool {
	if ra, rb := bindRank(a.bind), bindRank(b.bind); ra != rb {
		return ra < rb
	}
	ua, ub := len(a.name)-len(strings.TrimLeft(a.name, "_")), len(b.name)-len(strings.TrimLeft(b.name, "_"))
	if ua != ub {
		return ua < ub
	}
	if len(a.name) != len(b.name) {
		return len(a.name) < len(b.name)
	}
	if a.name != b.name {
		return a.name < b.name
	}
	return a.size > b.size
}

func bindRank(b elf.SymBind) int {
	switch b {
	case elf.STB_GLOBAL:
		return 0
	case elf.STB_WEAK:
		return 1
	}
	return 2
}

// find returns the symbol whose range holds addr. A symbol nested in a
// longer one (rare: assembly) is found by looking back a few entries. An
// unsized symbol names addr when no sized one does, addr is within
// unsizedReach of it and no sized symbol starts between them.
func (t symtab) find(addr uint64) (symbol, bool) {
	i := sort.Search(t.sized, func(i int) bool { return t.addr(i) > addr })
	for j := i - 1; j >= 0 && j >= i-8; j-- {
		if addr < t.addr(j)+t.size(j) {
			return t.symbol(j), true
		}
	}
	k := sort.Search(t.unsized, func(k int) bool { return t.addr(t.sized+k) > addr })
	if k == 0 {
		return symbol{}, false
	}
	u := t.sized + k - 1
	if addr-t.addr(u) >= unsizedReach || (i > 0 && t.addr(i-1) > t.addr(u)) {
		return symbol{}, false
	}
	return t.symbol(u), true
}

// demangled is name demangled when it is a C++ (Itanium) name, and name
// itself otherwise.
func demangled(name string) string {
	if !strings.HasPrefix(name, "_Z") {
		return name
	}
	return demangle.Filter(name)
}
