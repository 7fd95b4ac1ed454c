package mpiq

import (
	"debug/dwarf"
	"debug/elf"
	"fmt"
	"slices"
	"strings"
	"sync"
)

// types answers a message-queue library's questions about the MPI
// library's types from DWARF: a type by name (a typedef, struct or
// union), its size, and a member's offset. A member's name may be a
// path ("super.size"), and a member of an unnamed struct or union inside
// the type is found as the type's own, as C reads it.
//
// A server reads the types of a file once (typesIn) for all its ranks'
// helpers, and remembers each answer, which the next helper is told
// before it starts (known): a library asks the same of every rank.
type types struct {
	d      *dwarf.Data
	byName map[string]dwarf.Offset

	mu      sync.Mutex
	found   []dwarf.Type // by the number given out
	numbers map[string]int
	answers []string // "type NAME ID SIZE", "field ID NAME OFFSET", -1 for none
	told    map[string]bool
	syms    []string // the symbols the library asked for
}

// read are the types of each file a server read, by path.
var read = struct {
	sync.Mutex
	files map[string]*types
}{files: map[string]*types{}}

// typesIn are the types of the file at path, read once.
func typesIn(path string) (*types, error) {
	read.Lock()
	defer read.Unlock()
	if t, ok := read.files[path]; ok {
		return t, nil
	}
	t, err := readTypes(path)
	if err != nil {
		return nil, err
	}
	read.files[path] = t
	return t, nil
}

// known are the answers given so far, as the helper reads them before
// it starts: "type NAME ID SIZE" (SIZE -1: no such type) and "field ID
// NAME OFFSET" (OFFSET -1: no such member).
func (t *types) known() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return slices.Clone(t.answers)
}

// asked notes a symbol the library asked for, which its next helpers
// are told of for their own process before they start.
func (t *types) asked(sym string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !slices.Contains(t.syms, sym) {
		t.syms = append(t.syms, sym)
	}
}

// symbols are the symbols asked for so far.
func (t *types) symbols() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return slices.Clone(t.syms)
}

// remember keeps an answer once.
func (t *types) remember(line string) {
	if !t.told[line] {
		t.told[line] = true
		t.answers = append(t.answers, line)
	}
}

// readTypes indexes the named types of the DWARF in the ELF file at path.
func readTypes(path string) (*types, error) {
	f, err := elf.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	d, err := f.DWARF()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	t := &types{d: d, byName: map[string]dwarf.Offset{}, numbers: map[string]int{}, told: map[string]bool{}}
	r := d.Reader()
	for {
		e, err := r.Next()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if e == nil {
			break
		}
		switch e.Tag {
		case dwarf.TagTypedef, dwarf.TagStructType, dwarf.TagUnionType, dwarf.TagBaseType:
			name, _ := e.Val(dwarf.AttrName).(string)
			declaration, _ := e.Val(dwarf.AttrDeclaration).(bool)
			if _, seen := t.byName[name]; name != "" && !declaration && !seen {
				t.byName[name] = e.Offset
			}
		case dwarf.TagCompileUnit:
			continue
		}
		if e.Children && e.Tag != dwarf.TagCompileUnit {
			r.SkipChildren()
		}
	}
	return t, nil
}

// find is the number and size of the type named name, or ok false.
func (t *types) find(name string) (id int, size int64, ok bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if strings.ContainsAny(name, " \n") {
		return 0, 0, false
	}
	if id, ok := t.numbers[name]; ok {
		return id, t.found[id].Size(), true
	}
	off, ok := t.byName[name]
	var typ dwarf.Type
	var err error
	if ok {
		typ, err = t.d.Type(off)
	}
	if !ok || err != nil {
		t.remember("type " + name + " 0 -1")
		return 0, 0, false
	}
	t.found = append(t.found, typ)
	id = len(t.found) - 1
	t.numbers[name] = id
	t.remember(fmt.Sprintf("type %s %d %d", name, id, typ.Size()))
	return id, typ.Size(), true
}

// field is the offset of member name (a path) in type id, or ok false.
func (t *types) field(id int, name string) (int64, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if id < 0 || id >= len(t.found) || strings.ContainsAny(name, " \n") {
		return 0, false
	}
	typ, total := t.found[id], int64(0)
	for part := range strings.SplitSeq(name, ".") {
		off, next, ok := member(typ, part)
		if !ok {
			t.remember(fmt.Sprintf("field %d %s -1", id, name))
			return 0, false
		}
		typ, total = next, total+off
	}
	t.remember(fmt.Sprintf("field %d %s %d", id, name, total))
	return total, true
}

// member is a member of a struct or union type (through typedefs), its
// offset and type, looked for in unnamed members too.
func member(typ dwarf.Type, name string) (int64, dwarf.Type, bool) {
	for {
		td, ok := typ.(*dwarf.TypedefType)
		if !ok {
			break
		}
		typ = td.Type
	}
	st, ok := typ.(*dwarf.StructType)
	if !ok {
		return 0, nil, false
	}
	for _, f := range st.Field {
		if f.Name == name {
			return f.ByteOffset, f.Type, true
		}
	}
	for _, f := range st.Field {
		if f.Name != "" {
			continue
		}
		if off, inner, ok := member(f.Type, name); ok {
			return f.ByteOffset + off, inner, true
		}
	}
	return 0, nil, false
}
