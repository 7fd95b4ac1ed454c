package gdbmi

import (
	"debug/elf"
	"os"
	"strconv"
	"strings"

	"github.com/sdm-hpc/sdm/wire"
)

// maxGlobals bounds the globals listed, each of which costs an evaluation.
const maxGlobals = 64

// maxNames bounds the names a search for globals is narrowed to.
const maxNames = 1000

// globals lists the global and static variables of the program's own
// sources (those gdb can find on disk, which leaves out the C library's),
// with their values.
//
// A search of every variable would have gdb read all the debug
// information it has, the C library's too where it is installed: seconds
// of CPU per rank. So the search is narrowed to the names of the data
// objects of the program's executable (its ELF symbol table, through
// /proc/PID/exe), and gdb reads only what may hold them. A program without
// a symbol table is searched whole.
func globals(run func(string) (Record, string, error), pid int) ([]wire.Var, error) {
	cmd := "-symbol-info-variables"
	if names, ok := dataObjects(pid); ok {
		if len(names) == 0 {
			return []wire.Var{}, nil
		}
		// gdb's patterns are basic regular expressions: \| alternates.
		cmd += " --name " + Quote("^"+strings.Join(names, "$\\|^")+"$")
	}
	r, _, err := run(cmd)
	if err != nil {
		return nil, err
	}
	out := []wire.Var{}
	for _, file := range r.Results.Get("symbols").Get("debug").Items() {
		if _, err := os.Stat(file.S("fullname")); err != nil {
			continue
		}
		for _, sym := range file.Get("symbols").Items() {
			if len(out) == maxGlobals {
				return out, nil
			}
			value := ""
			if r, _, err := run("-data-evaluate-expression " + Quote(sym.S("name"))); err != nil {
				value = "<" + err.Error() + ">"
			} else {
				value = referred(run, sym.S("name"), r.Results.S("value"))
			}
			out = append(out, wire.Var{Name: sym.S("name"), Type: sym.S("type"), Value: value, Index: len(out)})
		}
	}
	return out, nil
}

// dataObjects returns the names of the defined data objects in the
// executable of process pid, as C identifiers; ok is false when there is
// no symbol table to read them from.
func dataObjects(pid int) (names []string, ok bool) {
	if pid <= 0 {
		return nil, false
	}
	f, err := elf.Open("/proc/" + strconv.Itoa(pid) + "/exe")
	if err != nil {
		return nil, false
	}
	defer f.Close()
	syms, err := f.Symbols()
	if err != nil {
		return nil, false
	}
	seen := map[string]bool{}
	for _, s := range syms {
		if elf.ST_TYPE(s.Info) != elf.STT_OBJECT || s.Section == elf.SHN_UNDEF || !identifier(s.Name) || reserved(s.Name) || seen[s.Name] {
			continue
		}
		if len(names) == maxNames {
			return nil, false
		}
		seen[s.Name] = true
		names = append(names, s.Name)
	}
	return names, true
}

// identifier says whether s is a C identifier, not a name the compiler
// made (counter.0) or one that needs quoting in a pattern.
func identifier(s string) bool {
	for i, r := range s {
		if !(r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || i > 0 && r >= '0' && r <= '9') {
			return false
		}
	}
	return s != ""
}

// reserved says whether a name is one C keeps for the implementation
// (__dso_handle, _IO_stdin_used): the C library's, not the program's.
func reserved(s string) bool {
	return strings.HasPrefix(s, "__") || len(s) > 1 && s[0] == '_' && s[1] >= 'A' && s[1] <= 'Z'
}
