package stackwalk

import (
	"cmp"
	"debug/elf"
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
// (hand-written assembly such as glibc's __restore_rt).
type symtab struct {
	sized, unsized []symbol
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
	return symtab{sized: oneEach(sized), unsized: oneEach(unsized)}
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
func (s symtab) find(addr uint64) (symbol, bool) {
	i := sort.Search(len(s.sized), func(i int) bool { return s.sized[i].addr > addr })
	for j := i - 1; j >= 0 && j >= i-8; j-- {
		if addr < s.sized[j].addr+s.sized[j].size {
			return s.sized[j], true
		}
	}
	k := sort.Search(len(s.unsized), func(k int) bool { return s.unsized[k].addr > addr })
	if k == 0 {
		return symbol{}, false
	}
	u := s.unsized[k-1]
	if addr-u.addr >= unsizedReach || (i > 0 && s.sized[i-1].addr > u.addr) {
		return symbol{}, false
	}
	return u, true
}

// demangled is name demangled when it is a C++ (Itanium) name, and name
// itself otherwise.
func demangled(name string) string {
	if !strings.HasPrefix(name, "_Z") {
		return name
	}
	return demangle.Filter(name)
}
