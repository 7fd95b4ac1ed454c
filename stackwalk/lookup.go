package stackwalk

import (
	"debug/elf"
	"fmt"
	"os"
)

// Symbols finds the addresses of symbols (variables as well as
// functions) in a running process, through the objects it maps: what a
// debugger library asks of its debugger (package mpiq's message-queue
// library). It needs no ptrace stop.
type Symbols struct {
	pid     int
	objects []mappedObject
}

// mappedObject is an object the process maps, read when first searched:
// its exported symbols, and all of them once a name is not among those.
type mappedObject struct {
	path     string
	first    mapping // its mapping of the lowest address
	file     *elf.File
	err      error
	bias     uint64
	biasOK   bool
	dynamic  map[string]uint64
	all      map[string]uint64
	readsAll bool
}

// open reads the object's headers once.
func (o *mappedObject) open() bool {
	if o.file == nil && o.err == nil {
		o.file, o.err = elf.Open(o.path)
		if o.err == nil {
			var loads []elf.ProgHeader
			for _, p := range o.file.Progs {
				if p.Type == elf.PT_LOAD {
					loads = append(loads, p.ProgHeader)
				}
			}
			o.bias, o.biasOK = loadBias(loads, o.first)
		}
	}
	return o.err == nil && o.biasOK
}

// table indexes a symbol table by name: the defined symbols' link-time
// addresses.
func table(syms []elf.Symbol) map[string]uint64 {
	m := make(map[string]uint64, len(syms))
	for _, sym := range syms {
		if sym.Section != elf.SHN_UNDEF && sym.Value != 0 {
			if _, seen := m[sym.Name]; !seen {
				m[sym.Name] = sym.Value
			}
		}
	}
	return m
}

// NewSymbols reads process pid's memory map.
func NewSymbols(pid int) (*Symbols, error) {
	maps, err := readMaps(pid)
	if err != nil {
		return nil, err
	}
	s := &Symbols{pid: pid}
	seen := map[string]bool{}
	for _, m := range maps {
		if m.path == "" || m.path[0] != '/' || seen[m.path] {
			continue
		}
		seen[m.path] = true
		s.objects = append(s.objects, mappedObject{path: m.path, first: m})
	}
	return s, nil
}

// Address is where symbol name lies in the process, and the path of the
// object that defines it: the first in address order (the program, then
// its libraries) that exports it, else the first whose full symbol table
// holds it; ok is false where none does. Each object's tables are read
// once.
func (s *Symbols) Address(name string) (addr uint64, path string, ok bool) {
	for _, full := range []bool{false, true} {
		for i := range s.objects {
			o := &s.objects[i]
			if !o.open() {
				continue
			}
			var tab map[string]uint64
			if full {
				if !o.readsAll {
					syms, _ := o.file.Symbols()
					o.all, o.readsAll = table(syms), true
				}
				tab = o.all
			} else {
				if o.dynamic == nil {
					syms, _ := o.file.DynamicSymbols()
					o.dynamic = table(syms)
				}
				tab = o.dynamic
			}
			if v, ok := tab[name]; ok {
				return v + o.bias, o.path, true
			}
		}
	}
	return 0, "", false
}

// Prefer has the object at path searched first: the library whose
// symbols a caller asks about (an MPI library's, by its message-queue
// library), so that the others are not read for them.
func (s *Symbols) Prefer(path string) {
	for i, o := range s.objects {
		if o.path == path {
			copy(s.objects[1:i+1], s.objects[:i])
			s.objects[0] = o
			return
		}
	}
}

// Close closes the objects opened.
func (s *Symbols) Close() {
	for _, o := range s.objects {
		if o.file != nil {
			o.file.Close()
		}
	}
}

// ReadMemory reads process pid's memory at addr into b, without a
// ptrace stop.
func ReadMemory(pid int, b []byte, addr uint64) error {
	m := procMem{pid: pid}
	defer m.close()
	return m.readAt(b, addr)
}

// DWARFFile is the file that holds the DWARF of the ELF file at path:
// the file itself, or its separate debug file found by build-id; "" for
// none.
func DWARFFile(path string) string {
	f, err := elf.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	if f.Section(".debug_info") != nil {
		return path
	}
	id := buildID(f)
	if len(id) < 3 {
		return ""
	}
	if _, err := os.Stat(debugPath(id)); err != nil {
		return ""
	}
	return debugPath(id)
}

// BuildID is the GNU build-id of the ELF file at path, in hex.
func BuildID(path string) (string, error) {
	f, err := elf.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	id := buildID(f)
	if id == "" {
		return "", fmt.Errorf("%s has no build-id", path)
	}
	return id, nil
}
