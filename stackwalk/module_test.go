package stackwalk

import (
	"debug/elf"
	"encoding/binary"
	"errors"
	"os"
	"testing"
)

// An object of another architecture is refused with the architecture's
// name: the ELF of a test program with its machine field made arm64's.
func TestArchError(t *testing.T) {
	bin := build(t, "gcc", "threads.c", "-O2", "-pthread")
	data, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	binary.LittleEndian.PutUint16(data[18:], uint16(elf.EM_AARCH64))
	m := &module{path: bin, open: func() ([]byte, func(), error) { return data, nil, nil }}
	m.header()
	err = m.err
	var ae *ArchError
	if !errors.As(err, &ae) || err.Error() != "stack sampling needs amd64; this is arm64" {
		t.Errorf("module of arm64: %v, want \"stack sampling needs amd64; this is arm64\"", err)
	}
}

// Aliases at one address: the same choice whatever the tables' order.
func TestAliasChoice(t *testing.T) {
	sym := func(name string, bind elf.SymBind) elf.Symbol {
		return elf.Symbol{Name: name, Info: elf.ST_INFO(bind, elf.STT_FUNC), Value: 0x1000, Size: 16, Section: 1}
	}
	a := []elf.Symbol{sym("__GI___sched_yield", elf.STB_LOCAL), sym("sched_yield", elf.STB_WEAK), sym("__sched_yield", elf.STB_GLOBAL)}
	b := []elf.Symbol{a[2], a[0], a[1]}
	for _, tables := range [][][]elf.Symbol{{a}, {b}, {a[:1], a[1:]}} {
		s, ok := newSymtab(tables...).find(0x1008)
		if !ok || s.name != "__sched_yield" {
			t.Errorf("%v: %q, want __sched_yield", tables, s.name)
		}
	}
	if _, ok := newSymtab(a).find(0x1010); ok {
		t.Error("a pc past the symbol's end named by it")
	}
}
