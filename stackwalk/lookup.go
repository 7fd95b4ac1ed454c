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

// mappedObject is an object the process maps, opened when first searched.
type mappedObject struct {
	path  string
	first mapping // its mapping of the lowest address
	file  *elf.File
	err   error
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

// Address is where symbol name lies in the process, from the first
// object in address order that defines it (the program, then its
// libraries), and that object's path; ok is false where none does.
func (s *Symbols) Address(name string) (addr uint64, path string, ok bool) {
	for i := range s.objects {
		o := &s.objects[i]
		if o.file == nil && o.err == nil {
			o.file, o.err = elf.Open(o.path)
		}
		if o.err != nil {
			continue
		}
		for _, tab := range []func() ([]elf.Symbol, error){o.file.DynamicSymbols, o.file.Symbols} {
			syms, _ := tab()
			for _, sym := range syms {
				if sym.Name != name || sym.Section == elf.SHN_UNDEF || sym.Value == 0 {
					continue
				}
				var loads []elf.ProgHeader
				for _, p := range o.file.Progs {
					if p.Type == elf.PT_LOAD {
						loads = append(loads, p.ProgHeader)
					}
				}
				if bias, ok := loadBias(loads, o.first); ok {
					return sym.Value + bias, o.path, true
				}
			}
		}
	}
	return 0, "", false
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
