package stackwalk

import (
	"bytes"
	"debug/elf"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
)

// module is one ELF object (executable, shared library, vdso) as the
// sampler needs it: its loadable segments (for the load bias), its call
// frame information, its function symbols, and its DWARF, read on first
// use. A module is shared by every process that maps it.
type module struct {
	path    string
	buildID string
	loads   []elf.ProgHeader
	cfi     *cfiTable
	syms    symtab
	lines   *lineIndex // nil without DWARF
	err     error      // why the module could not be read; its frames are "??"
	once    sync.Once
	files   []io.Closer
}

// debugRoot is where separate debug files live, by build-id.
const debugRoot = "/usr/lib/debug"

// load reads the module once, from what open opens: the object itself.
func (m *module) load(open func() (io.ReaderAt, io.Closer, error)) {
	m.once.Do(func() {
		r, c, err := open()
		if err != nil {
			m.err = err
			return
		}
		if c != nil {
			m.files = append(m.files, c)
		}
		m.err = m.read(r)
	})
}

func (m *module) read(r io.ReaderAt) error {
	f, err := elf.NewFile(r)
	if err != nil {
		return fmt.Errorf("%s: %w", m.path, err)
	}
	if f.Machine != elf.EM_X86_64 {
		return &ArchError{Arch: archName(f.Machine)}
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_LOAD {
			m.loads = append(m.loads, p.ProgHeader)
		}
	}
	m.buildID = buildID(f)
	debug := m.debugFile()

	var eh, df []fde
	if s := f.Section(".eh_frame"); s != nil && s.Type != elf.SHT_NOBITS {
		if data, err := s.Data(); err == nil {
			eh, _ = parseCFI(data, s.Addr, true)
		}
	}
	for _, o := range []*elf.File{f, debug} {
		if o == nil {
			continue
		}
		if s := o.Section(".debug_frame"); s != nil && s.Type != elf.SHT_NOBITS {
			if data, err := s.Data(); err == nil {
				df, _ = parseCFI(data, 0, false)
				break
			}
		}
	}
	m.cfi = newCFITable(eh, df)

	var tables [][]elf.Symbol
	for _, o := range []*elf.File{f, debug} {
		if o == nil {
			continue
		}
		if s, err := o.Symbols(); err == nil {
			tables = append(tables, s)
		}
		if s, err := o.DynamicSymbols(); err == nil {
			tables = append(tables, s)
		}
	}
	m.syms = newSymtab(tables...)

	for _, o := range []*elf.File{f, debug} {
		if o != nil && o.Section(".debug_info") != nil && o.Section(".debug_info").Type != elf.SHT_NOBITS {
			m.lines = &lineIndex{file: o}
			break
		}
	}
	return nil
}

// debugFile opens the separate debug file that matches the module's
// build-id, or returns nil.
func (m *module) debugFile() *elf.File {
	if len(m.buildID) < 3 {
		return nil
	}
	path := filepath.Join(debugRoot, ".build-id", m.buildID[:2], m.buildID[2:]+".debug")
	fh, err := os.Open(path)
	if err != nil {
		return nil
	}
	f, err := elf.NewFile(fh)
	if err != nil || buildID(f) != m.buildID {
		fh.Close()
		return nil
	}
	m.files = append(m.files, fh)
	return f
}

// bias is the load bias of a mapping of this module: the mapped address
// minus the link-time address of the same byte, found through the PT_LOAD
// segment that holds the mapping's file offset.
func (m *module) bias(mp mapping) (uint64, bool) {
	const page = 0xfff
	for _, p := range m.loads {
		off := p.Off &^ page
		if mp.offset >= off && mp.offset < p.Off+p.Filesz {
			return mp.start - ((p.Vaddr &^ page) + (mp.offset - off)), true
		}
	}
	return 0, false
}

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
