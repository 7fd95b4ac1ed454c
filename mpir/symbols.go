package mpir

import (
	"bufio"
	"bytes"
	"debug/elf"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// symbols are the MPIR names found in a process, with where they are.
type symbols struct {
	addr    map[string]uint64
	file    map[string]string // the object that defines each name
	objects int               // how many objects were searched
}

func (s symbols) has(name string) bool { _, ok := s.addr[name]; return ok }

// mapping is the lowest mapping of an object file in a process.
type mapping struct {
	start, offset uint64
	path          string
}

// lookup finds names in the executable of pid and every object it has
// mapped (the starter's symbols may live in a shared library, as Open
// MPI's live in libopen-rte), from the ELF symbol tables of the files.
// The first object to define a name wins, the executable first, as with
// the dynamic linker.
func lookup(pid int, names []string) (symbols, error) {
	maps, err := mappings(pid)
	if err != nil {
		return symbols{}, err
	}
	want := map[string]bool{}
	for _, n := range names {
		want[n] = true
	}
	s := symbols{addr: map[string]uint64{}, file: map[string]string{}}
	for _, m := range maps {
		f, err := openObject(pid, m)
		if err != nil {
			continue // not ELF, or gone: nothing of ours is there
		}
		s.objects++
		bias, ok := loadBias(f, m)
		if ok {
			for _, typ := range []elf.SectionType{elf.SHT_DYNSYM, elf.SHT_SYMTAB} {
				scanSymbols(f, typ, want, func(name string, value uint64) {
					if !s.has(name) {
						s.addr[name] = value + bias
						s.file[name] = m.path
					}
				})
			}
		}
		f.Close()
	}
	return s, nil
}

// mappings lists the objects mapped into pid, the executable first.
func mappings(pid int) ([]mapping, error) {
	exe, _ := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
	file, err := os.Open(fmt.Sprintf("/proc/%d/maps", pid))
	if err != nil {
		return nil, err
	}
	defer file.Close()
	seen := map[string]bool{}
	var out []mapping
	sc := bufio.NewScanner(file)
	for sc.Scan() {
		// start-end perms offset dev inode path
		f := strings.Fields(sc.Text())
		if len(f) < 6 || !strings.HasPrefix(f[5], "/") || seen[f[5]] {
			continue
		}
		seen[f[5]] = true
		bounds := strings.SplitN(f[0], "-", 2)
		start, err1 := strconv.ParseUint(bounds[0], 16, 64)
		offset, err2 := strconv.ParseUint(f[2], 16, 64)
		if err1 != nil || err2 != nil {
			continue
		}
		m := mapping{start: start, offset: offset, path: strings.Join(f[5:], " ")}
		if m.path == exe {
			out = append([]mapping{m}, out...)
		} else {
			out = append(out, m)
		}
	}
	return out, sc.Err()
}

// openObject opens a mapped file, through the process's own view of the
// file system when ours differs (a container) or the file was replaced.
func openObject(pid int, m mapping) (*elf.File, error) {
	f, err := elf.Open(fmt.Sprintf("/proc/%d/root%s", pid, m.path))
	if err != nil {
		f, err = elf.Open(m.path)
	}
	return f, err
}

// loadBias is what was added to the object's addresses when it was mapped:
// the mapping at file offset m.offset belongs to the PT_LOAD segment that
// holds that offset.
func loadBias(f *elf.File, m mapping) (uint64, bool) {
	if f.Type == elf.ET_EXEC {
		return 0, true
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_LOAD && m.offset >= p.Off&^(p.Align-1) && m.offset < p.Off+p.Filesz {
			return m.start - (p.Vaddr - p.Off + m.offset), true
		}
	}
	return 0, false
}

// scanSymbols calls found for each symbol of f's table of type typ that
// want names and f defines. It reads the table's bytes as they are:
// debug/elf's Symbols makes a string of every name, and a starter's
// libraries hold tens of thousands of symbols, which cost a tenth of a
// second while the starter is held stopped.
func scanSymbols(f *elf.File, typ elf.SectionType, want map[string]bool, found func(name string, value uint64)) {
	for _, sec := range f.Sections {
		if sec.Type != typ || int(sec.Link) >= len(f.Sections) {
			continue
		}
		tab, err1 := sec.Data()
		strs, err2 := f.Sections[sec.Link].Data()
		if err1 != nil || err2 != nil {
			continue
		}
		size, wide := 16, f.Class == elf.ELFCLASS64
		if wide {
			size = 24
		}
		order := f.ByteOrder
		for at := size; at+size <= len(tab); at += size { // entry 0 is null
			e := tab[at : at+size]
			var name uint32
			var shndx uint16
			var value uint64
			if wide {
				name, shndx, value = order.Uint32(e), order.Uint16(e[6:]), order.Uint64(e[8:])
			} else {
				name, shndx, value = order.Uint32(e), order.Uint16(e[14:]), uint64(order.Uint32(e[4:]))
			}
			if shndx == uint16(elf.SHN_UNDEF) || int(name) >= len(strs) {
				continue
			}
			n := strs[name:]
			if end := bytes.IndexByte(n, 0); end >= 0 {
				n = n[:end]
			}
			if want[string(n)] {
				found(string(n), value)
			}
		}
	}
}
