package mpir

import (
	"bufio"
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
			dyn, _ := f.DynamicSymbols()
			all, _ := f.Symbols()
			for _, sym := range append(dyn, all...) {
				if want[sym.Name] && sym.Section != elf.SHN_UNDEF && !s.has(sym.Name) {
					s.addr[sym.Name] = sym.Value + bias
					s.file[sym.Name] = m.path
				}
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
