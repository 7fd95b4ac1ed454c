package stackwalk

import (
	"bytes"
	"debug/elf"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"

	"golang.org/x/sys/unix"
)

// module is one ELF object (executable, shared library, vdso) as the
// sampler needs it, shared by every process that maps it. Each part is
// read on first use, so that of the seventy objects an MPI rank maps,
// only those its stacks pass through cost anything: the headers (for
// the load bias) when a walk first meets the module, the call frame
// information one FDE at a time (through .eh_frame_hdr), the symbols
// when a frame is first named, the DWARF one unit at a time. Symbols and
// inflated DWARF sections come from the host's cache when another server
// made them (cache.go).
type module struct {
	path  string
	cache *hostCache
	// open gives the object's bytes: the file mapped, or the vdso's image.
	open func() ([]byte, func(), error)

	once    sync.Once
	err     error // why the module could not be read; its frames are "??"
	data    []byte
	release []func()
	file    *elf.File
	buildID string
	loads   []elf.ProgHeader

	debugOnce sync.Once
	debug     *object // the separate debug file, or nil

	cfiOnce sync.Once
	cfi     cfiSource

	symsOnce sync.Once
	syms     symtab

	linesOnce sync.Once
	lines     *lineIndex // nil without DWARF
}

// object is an ELF file and its bytes.
type object struct {
	f    *elf.File
	data []byte
}

// debugRoot is where separate debug files live, by build-id.
var debugRoot = "/usr/lib/debug"

// header reads the object's headers once; it reports whether the module
// can be used.
func (m *module) header() bool {
	m.once.Do(func() {
		data, release, err := m.open()
		if err != nil {
			m.err = err
			return
		}
		if release != nil {
			m.release = append(m.release, release)
		}
		f, err := elf.NewFile(bytes.NewReader(data))
		if err != nil {
			m.err = fmt.Errorf("%s: %w", m.path, err)
			return
		}
		if f.Machine != elf.EM_X86_64 {
			m.err = &ArchError{Arch: archName(f.Machine)}
			return
		}
		for _, p := range f.Progs {
			if p.Type == elf.PT_LOAD {
				m.loads = append(m.loads, p.ProgHeader)
			}
		}
		m.data, m.file, m.buildID = data, f, buildID(f)
	})
	return m.err == nil
}

// debugFile is the separate debug file that matches the module's
// build-id, or nil.
func (m *module) debugFile() *object {
	m.debugOnce.Do(func() {
		if len(m.buildID) < 3 {
			return
		}
		data, release, err := mapFile(debugPath(m.buildID))
		if err != nil {
			return
		}
		f, err := elf.NewFile(bytes.NewReader(data))
		if err != nil || buildID(f) != m.buildID {
			release()
			return
		}
		m.release = append(m.release, release)
		m.debug = &object{f: f, data: data}
	})
	return m.debug
}

// objects are the module's object and its debug file, where there is one.
func (m *module) objects() []*object {
	objs := []*object{{f: m.file, data: m.data}}
	if d := m.debugFile(); d != nil {
		objs = append(objs, d)
	}
	return objs
}

// frames is the module's call frame information: .eh_frame through its
// header's table (else parsed whole), then .debug_frame of the object or
// its debug file, parsed whole on first use.
func (m *module) frames() cfiSource {
	m.cfiOnce.Do(func() {
		var eh cfiSource
		if s := m.file.Section(".eh_frame"); s != nil && s.Type != elf.SHT_NOBITS {
			data := sectionBytes(m.data, s)
			if h := m.file.Section(".eh_frame_hdr"); h != nil {
				eh = newEHIndex(sectionBytes(m.data, h), h.Addr, data, s.Addr)
			}
			if eh == nil && data != nil {
				fdes, _ := parseCFI(data, s.Addr, true)
				eh = newCFITable(fdes)
			}
		}
		m.cfi = &cfiChain{first: eh, rest: func() cfiSource {
			for _, o := range m.objects() {
				if s := o.f.Section(".debug_frame"); s != nil && s.Type != elf.SHT_NOBITS {
					if data, err := m.section(o, s); err == nil {
						fdes, _ := parseCFI(data, 0, false)
						return newCFITable(fdes)
					}
				}
			}
			return nil
		}}
	})
	return m.cfi
}

// symbols is the module's function symbols: from the host's cache, else
// read from the object and its debug file (and left in the cache). The
// cache's entry is named by the sizes of the tables it is made of: a
// stripped object of the same build (its build-id is the same), or one
// whose debug file was installed since, has an entry of its own.
func (m *module) symbols() symtab {
	m.symsOnce.Do(func() {
		name := "symbols"
		for _, o := range m.objects() {
			for _, t := range []string{".symtab", ".dynsym"} {
				size := uint64(0)
				if s := o.f.Section(t); s != nil {
					size = s.Size
				}
				name += "-" + strconv.FormatUint(size, 10)
			}
		}
		m.syms = m.cache.symbols(m.buildID, name, func() symtab {
			var tables [][]elf.Symbol
			for _, o := range m.objects() {
				if s, err := o.f.Symbols(); err == nil {
					tables = append(tables, s)
				}
				if s, err := o.f.DynamicSymbols(); err == nil {
					tables = append(tables, s)
				}
			}
			return newSymtab(tables...)
		})
	})
	return m.syms
}

// lineSections are the DWARF sections that names and lines of frames
// read (not .debug_loclists: stacks read no variables).
var lineSections = []string{".debug_aranges", ".debug_info", ".debug_abbrev", ".debug_line", ".debug_str",
	".debug_line_str", ".debug_rnglists", ".debug_ranges", ".debug_addr", ".debug_str_offsets"}

// lineIndex is the module's DWARF, from the object or its debug file,
// or nil; its compressed sections start being inflated into the host's
// cache at once, side by side (hostCache.ahead).
func (m *module) lineIndex() *lineIndex {
	m.linesOnce.Do(func() {
		for _, o := range m.objects() {
			if s := o.f.Section(".debug_info"); s != nil && s.Type != elf.SHT_NOBITS {
				var secs []*elf.Section
				for _, name := range lineSections {
					if s := o.f.Section(name); s != nil {
						secs = append(secs, s)
					}
				}
				m.cache.ahead(m.buildID, secs)
				m.lines = &lineIndex{file: o.f,
					section: func(s *elf.Section) ([]byte, error) { return m.section(o, s) },
					keep: func(build func() ([]cuRange, error)) ([]cuRange, error) {
						return m.cache.units(m.buildID, build)
					}}
				return
			}
		}
	})
	return m.lines
}

// section is a section's bytes: the mapped file's own, or, compressed,
// inflated once per host into its cache (else in memory).
func (m *module) section(o *object, s *elf.Section) ([]byte, error) {
	if s.Flags&elf.SHF_COMPRESSED == 0 {
		if b := sectionBytes(o.data, s); b != nil {
			return b, nil
		}
		return nil, fmt.Errorf("%s: section %s is beyond the file's end", m.path, s.Name)
	}
	return m.cache.section(m.buildID, s)
}

// sectionBytes is an uncompressed section's bytes in the object's, or nil.
func sectionBytes(data []byte, s *elf.Section) []byte {
	if s.Type == elf.SHT_NOBITS || s.Flags&elf.SHF_COMPRESSED != 0 || s.Offset > uint64(len(data)) || s.FileSize > uint64(len(data))-s.Offset {
		return nil
	}
	return data[s.Offset : s.Offset+s.FileSize]
}

// close lets go of the module's mappings.
func (m *module) close() {
	for _, r := range m.release {
		r()
	}
	m.release = nil
}

// bias is the load bias of a mapping of this module: the mapped address
// minus the link-time address of the same byte, found through the PT_LOAD
// segment that holds the mapping's file offset.
func (m *module) bias(mp mapping) (uint64, bool) { return loadBias(m.loads, mp) }

// loadBias is the load bias of a mapping of an object with these PT_LOAD
// segments.
func loadBias(loads []elf.ProgHeader, mp mapping) (uint64, bool) {
	const page = 0xfff
	for _, p := range loads {
		off := p.Off &^ page
		if mp.offset >= off && mp.offset < p.Off+p.Filesz {
			return mp.start - ((p.Vaddr &^ page) + (mp.offset - off)), true
		}
	}
	return 0, false
}

// mapFile maps a file read-only: its pages are the page cache's, shared
// by every process that maps it.
func mapFile(path string) ([]byte, func(), error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, nil, err
	}
	if st.Size() == 0 {
		return nil, func() {}, nil
	}
	data, err := unix.Mmap(int(f.Fd()), 0, int(st.Size()), unix.PROT_READ, unix.MAP_PRIVATE)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: map it: %w", path, err)
	}
	return data, func() { unix.Munmap(data) }, nil
}

// debugPath is where the separate debug file of build-id id is.
func debugPath(id string) string {
	return filepath.Join(debugRoot, ".build-id", id[:2], id[2:]+".debug")
}

// HasDebugInfo says whether the ELF file at path carries DWARF, in itself
// or in a separate debug file found by its build-id.
func HasDebugInfo(path string) bool { return DWARFFile(path) != "" }

// buildID is the hex GNU build-id of an ELF file, or "".
func buildID(f *elf.File) string {
	s := f.Section(".note.gnu.build-id")
	if s == nil {
		return ""
	}
	data, err := s.Data()
	if err != nil {
		return ""
	}
	r := &reader{b: data}
	for !r.err && r.pos < len(data) {
		namesz, descsz, typ := r.u32(), r.u32(), r.u32()
		name := r.take(int((namesz + 3) &^ 3))
		desc := r.take(int((descsz + 3) &^ 3))
		if r.err {
			return ""
		}
		if typ == 3 && bytes.HasPrefix(name, []byte("GNU\x00")) && int(descsz) <= len(desc) {
			return hex.EncodeToString(desc[:descsz])
		}
	}
	return ""
}

func archName(m elf.Machine) string {
	switch m {
	case elf.EM_AARCH64:
		return "arm64"
	case elf.EM_386:
		return "386"
	case elf.EM_PPC64:
		return "ppc64"
	case elf.EM_RISCV:
		return "riscv64"
	}
	return m.String()
}
