package mpiq

import (
	"debug/dwarf"
	"debug/elf"
	"fmt"
	"strings"
)

// types answers a message-queue library's questions about the MPI
// library's types from DWARF: a type by name (a typedef, struct or
// union), its size, and a member's offset. A member's name may be a
// path ("super.size"), and a member of an unnamed struct or union inside
// the type is found as the type's own, as C reads it.
type types struct {
	d      *dwarf.Data
	byName map[string]dwarf.Offset
	found  []dwarf.Type // by the number given out
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
	t := &types{d: d, byName: map[string]dwarf.Offset{}}
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
	off, ok := t.byName[name]
	if !ok {
		return 0, 0, false
	}
	typ, err := t.d.Type(off)
	if err != nil {
		return 0, 0, false
	}
	t.found = append(t.found, typ)
	return len(t.found) - 1, typ.Size(), true
}

// field is the offset of member name (a path) in type id, or ok false.
func (t *types) field(id int, name string) (int64, bool) {
	if id < 0 || id >= len(t.found) {
		return 0, false
	}
	typ, total := t.found[id], int64(0)
	for part := range strings.SplitSeq(name, ".") {
		off, next, ok := member(typ, part)
		if !ok {
			return 0, false
		}
		typ, total = next, total+off
	}
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
