package stackwalk

import (
	"debug/dwarf"
	"debug/elf"
	"encoding/binary"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/sdm-hpc/sdm/testkit/testenv"
)

// dataOf is a section's bytes as debug/elf gives them, inflated.
func dataOf(s *elf.Section) ([]byte, error) { return s.Data() }

// index is a line index of f read from src, as init would make it.
func index(f *elf.File, src unitSource, cus []cuRange) *lineIndex {
	x := &lineIndex{file: f, src: src, cus: cus, units: map[dwarf.Offset]*unit{}, memo: map[uint64][]place{}}
	x.once.Do(func() {})
	return x
}

// agree checks that reading f's DWARF per unit names the same functions,
// files, lines and inlined calls as reading it whole, at the entry and
// the middle of every function symbol of f where the whole read names
// one, and says how many pcs had a line.
func agree(t *testing.T, name string, f *elf.File) {
	t.Helper()
	split, splitCUs, err := splitUnits(f, dataOf, nil)
	if err != nil {
		t.Fatalf("%s: not read per unit: %v", name, err)
	}
	all, allCUs, err := wholeUnits(f, dataOf)
	if err != nil {
		t.Fatal(err)
	}
	syms, err := f.Symbols()
	if err != nil {
		t.Fatal(err)
	}
	xs, xw := index(f, split, splitCUs), index(f, all, allCUs)
	pcs, lines, more := 0, 0, 0
	for _, s := range syms {
		if elf.ST_TYPE(s.Info) != elf.STT_FUNC || s.Value == 0 {
			continue
		}
		for _, pc := range []uint64{s.Value, s.Value + s.Size/2} {
			got, want := xs.places(pc), xw.places(pc)
			pcs++
			if len(want) == 0 && len(got) > 0 {
				// .debug_aranges names the units of code that the units'
				// own ranges, read whole, leave out (C++ main in
				// .text.startup at -O2).
				more++
				continue
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("%s: %s+%#x: per unit %+v, whole %+v", name, s.Name, pc-s.Value, got, want)
			}
			if len(want) > 0 && want[0].line > 0 {
				lines++
			}
		}
	}
	if lines == 0 {
		t.Fatalf("%s: no pc of %d has a line: nothing compared", name, pcs)
	}
	t.Logf("%s: %d pcs agree, %d with a line, %d more named per unit; %d units read", name, pcs, lines, more, len(xs.units))
}

// Programs of C (-O0 and -O2, with inlined calls) and C++ read per unit
// agree with the same read whole.
func TestPerUnitAgreesWithWholePrograms(t *testing.T) {
	for _, c := range []struct{ compiler, src, opt string }{
		{"gcc", "threads.c", "-O0"}, {"gcc", "inline.c", "-O2"}, {"g++", "cxx.cc", "-O2"},
	} {
		bin := build(t, c.compiler, c.src, "-g", c.opt, "-pthread")
		f, err := elf.Open(bin)
		if err != nil {
			t.Fatal(err)
		}
		agree(t, c.src+" "+c.opt, f)
		f.Close()
	}
}

// The C library's separate debug file (libc6-dbg: compressed sections,
// DWARF 5, assembly units) read per unit agrees with it read whole.
func TestPerUnitAgreesWithWholeLibc(t *testing.T) {
	lib, err := elf.Open("/lib/x86_64-linux-gnu/libc.so.6")
	if err != nil {
		testenv.Missing(t, "the C library at /lib/x86_64-linux-gnu/libc.so.6")
	}
	defer lib.Close()
	id := buildID(lib)
	path := filepath.Join(debugRoot, ".build-id", id[:2], id[2:]+".debug")
	if _, err := os.Stat(path); err != nil {
		testenv.Missing(t, "libc's debug file (package libc6-dbg): "+path)
	}
	f, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	agree(t, "libc", f)
}

// Units whose entries reach into other units (link-time optimisation's
// DW_FORM_ref_addr) are read whole.
func TestCrossUnitReferencesReadWhole(t *testing.T) {
	bin := build(t, "gcc", "inline.c", "-g", "-O2", "-flto")
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	abbrev, err := f.Section(".debug_abbrev").Data()
	if err != nil {
		t.Fatal(err)
	}
	if !crossUnitForms(abbrev) {
		t.Skip("this compiler's -flto output has no DW_FORM_ref_addr")
	}
	if _, _, err := splitUnits(f, dataOf, nil); err == nil {
		t.Fatal("a module with DW_FORM_ref_addr is read per unit")
	}
	x := &lineIndex{file: f, section: dataOf}
	if p := x.places(symbolValue(t, f, "main")); len(p) == 0 || p[len(p)-1].function != "main" {
		t.Errorf("main, read whole: %+v", p)
	}
}

func symbolValue(t *testing.T, f *elf.File, name string) uint64 {
	t.Helper()
	syms, err := f.Symbols()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range syms {
		if s.Name == name {
			return s.Value
		}
	}
	t.Fatalf("no symbol %s", name)
	return 0
}

// Bad DWARF is an error or no answer, never a panic: aranges, abbreviation
// tables, and units and line programs read per unit.
func FuzzDWARFUnits(f *testing.F) {
	f.Add([]byte{}, uint32(0))
	f.Add([]byte{0x2c, 0, 0, 0, 2, 0, 0, 0, 0, 0, 8, 0}, uint32(0))
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 1, 0, 0, 0, 0, 0, 0, 0}, uint32(0))
	f.Add([]byte{1, 0x11, 1, 0x10, 0x10, 0, 0, 0}, uint32(3))
	f.Fuzz(func(t *testing.T, data []byte, off uint32) {
		parseAranges(data, binary.LittleEndian)
		crossUnitForms(data)
		p := &perUnit{
			order:  binary.LittleEndian,
			info:   data,
			line:   data,
			abbrev: data,
			extra:  map[string][]byte{},
		}
		if d, _, err := p.unit(dwarf.Offset(off)); err == nil {
			if cu, err := d.Reader().Next(); err == nil && cu != nil {
				d.LineReader(cu)
				d.Ranges(cu)
			}
		}
	})
}
