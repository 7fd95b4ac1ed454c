package stackwalk

import (
	"debug/dwarf"
	"debug/elf"
	"errors"
	"io"
	"path/filepath"
	"sort"
	"strings"
	"sync"
)

// lineIndex answers "which function, file and line, and which inlined
// calls, hold this pc" from a module's DWARF. It reads the DWARF on first
// use, after the process that needed it was let go, and each compile unit
// on first use; answers are cached per pc, which every process running
// the same code shares.
type lineIndex struct {
	file    *elf.File
	section sectionFunc
	keep    rangesKeeper // nil: the units' ranges are read each time

	once sync.Once
	src  unitSource // nil without usable DWARF
	cus  []cuRange

	mu    sync.Mutex
	units map[dwarf.Offset]*unit
	memo  map[uint64][]place
}

// place is one source position at a pc: the innermost inlined call first.
type place struct {
	function string
	file     string
	line     int
	inlined  bool
}

type cuRange struct {
	low, high uint64
	cu        dwarf.Offset
}

type unit struct {
	d      *dwarf.Data
	dir    string // the compilation directory, for relative file names
	lr     *dwarf.LineReader
	files  []*dwarf.LineFile
	scopes []*scope
}

// scope is a function or an inlined call in it, with the call's position.
type scope struct {
	ranges   [][2]uint64
	name     string
	inlined  bool
	callFile string
	callLine int
	children []*scope
}

func (s *scope) holds(pc uint64) bool {
	for _, r := range s.ranges {
		if pc >= r[0] && pc < r[1] {
			return true
		}
	}
	return false
}

func (x *lineIndex) init() {
	x.once.Do(func() {
		src, cus, err := unitsOf(x.file, x.section, x.keep)
		if err != nil {
			return
		}
		x.src, x.cus = src, cus
		x.units = map[dwarf.Offset]*unit{}
		x.memo = map[uint64][]place{}
	})
}

// places returns the source positions at pc (a link-time address), the
// innermost inlined call first, or nil.
func (x *lineIndex) places(pc uint64) []place {
	x.init()
	if x.src == nil {
		return nil
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	if p, ok := x.memo[pc]; ok {
		return p
	}
	var p []place
	// Ranges can hold others (a unit's range around another unit's code):
	// every range that starts at or before pc is looked at, nearest first.
	i := sort.Search(len(x.cus), func(i int) bool { return x.cus[i].low > pc })
	for j := i - 1; j >= 0; j-- {
		if c := x.cus[j]; pc >= c.low && pc < c.high {
			if u := x.unit(c.cu); u != nil {
				p = u.places(pc)
			}
			break
		}
	}
	x.memo[pc] = p
	return p
}

// unit reads a compile unit's line table and function tree once.
func (x *lineIndex) unit(off dwarf.Offset) *unit {
	if u, ok := x.units[off]; ok {
		return u
	}
	u := &unit{}
	x.units[off] = u
	d, at, err := x.src.unit(off)
	if err != nil {
		return u
	}
	u.d = d
	r := d.Reader()
	r.Seek(at)
	cu, err := r.Next()
	if err != nil || cu == nil {
		return u
	}
	if dir, ok := cu.Val(dwarf.AttrCompDir).(string); ok && filepath.IsAbs(dir) {
		u.dir = dir
	}
	if lr, err := d.LineReader(cu); err == nil && lr != nil {
		u.lr = lr
		u.files = lr.Files()
	}
	if cu.Children {
		u.readScopes(r)
	}
	return u
}

// readScopes reads the function tree of the unit r is in: subprograms
// and the inlined calls inside them, through lexical blocks; other
// entries are skipped whole.
func (u *unit) readScopes(r *dwarf.Reader) {
	var stack []*scope // the open entries: nil for a transparent one
	add := func(s *scope) {
		for k := len(stack) - 1; k >= 0; k-- {
			if stack[k] != nil {
				stack[k].children = append(stack[k].children, s)
				return
			}
		}
		u.scopes = append(u.scopes, s)
	}
	for {
		e, err := r.Next()
		if err != nil || e == nil {
			return
		}
		if e.Tag == 0 {
			if len(stack) == 0 {
				return // the compile unit's end
			}
			stack = stack[:len(stack)-1]
			continue
		}
		var s *scope
		switch e.Tag {
		case dwarf.TagSubprogram, dwarf.TagInlinedSubroutine:
			if s = u.scope(e); s == nil {
				if e.Children {
					r.SkipChildren()
				}
				continue
			}
			add(s)
		case dwarf.TagLexDwarfBlock, dwarf.TagNamespace, dwarf.TagClassType, dwarf.TagStructType:
			// Transparent: what they hold belongs to the scope around them.
		default:
			if e.Children {
				r.SkipChildren()
			}
			continue
		}
		if e.Children {
			stack = append(stack, s)
		}
	}
}

// scope is a function's or an inlined call's scope, nil for one without
// code.
func (u *unit) scope(e *dwarf.Entry) *scope {
	rs, _ := u.d.Ranges(e)
	if len(rs) == 0 {
		return nil
	}
	s := &scope{ranges: rs, name: u.name(e), inlined: e.Tag == dwarf.TagInlinedSubroutine}
	if s.inlined {
		if f, ok := e.Val(dwarf.AttrCallFile).(int64); ok && f >= 0 && int(f) < len(u.files) && u.files[f] != nil {
			s.callFile = u.path(u.files[f])
		}
		if l, ok := e.Val(dwarf.AttrCallLine).(int64); ok {
			s.callLine = int(l)
		}
	}
	return s
}

// name is a function's name: the demangled linkage name when there is one
// (C++ says more with it), else its DWARF name, following the entries an
// inlined call or an out-of-line definition points at.
func (u *unit) name(e *dwarf.Entry) string {
	for hops := 0; e != nil && hops < 4; hops++ {
		for _, a := range []dwarf.Attr{dwarf.AttrLinkageName, 0x2007 /* DW_AT_MIPS_linkage_name */} {
			if n, ok := e.Val(a).(string); ok && n != "" {
				return demangled(n)
			}
		}
		if n, ok := e.Val(dwarf.AttrName).(string); ok && n != "" {
			return n
		}
		off, ok := e.Val(dwarf.AttrAbstractOrigin).(dwarf.Offset)
		if !ok {
			off, ok = e.Val(dwarf.AttrSpecification).(dwarf.Offset)
		}
		if !ok {
			return ""
		}
		r := u.d.Reader()
		r.Seek(off)
		e, _ = r.Next()
	}
	return ""
}

func (u *unit) places(pc uint64) []place {
	file, line := u.line(pc)
	var chain []*scope
	for scopes := u.scopes; ; {
		var in *scope
		for _, s := range scopes {
			if s.holds(pc) {
				in = s
				break
			}
		}
		if in == nil {
			break
		}
		chain = append(chain, in)
		scopes = in.children
	}
	if len(chain) == 0 {
		if file == "" {
			return nil
		}
		return []place{{file: file, line: line}}
	}
	out := make([]place, 0, len(chain))
	for k := len(chain) - 1; k >= 0; k-- {
		s := chain[k]
		out = append(out, place{function: s.name, file: file, line: line, inlined: k > 0})
		file, line = s.callFile, s.callLine
	}
	return out
}

// line finds pc's row in the line table: SeekPC first, and a scan of every
// row when SeekPC misses (it can, for code in .text.startup at -O2).
func (u *unit) line(pc uint64) (string, int) {
	if u.lr == nil {
		return "", 0
	}
	var e dwarf.LineEntry
	if err := u.lr.SeekPC(pc, &e); err == nil {
		return u.path(e.File), e.Line
	}
	u.lr.Reset()
	var prev dwarf.LineEntry
	have := false
	for {
		err := u.lr.Next(&e)
		if errors.Is(err, io.EOF) || err != nil {
			break
		}
		if have && !prev.EndSequence && prev.Address <= pc && pc < e.Address {
			return u.path(prev.File), prev.Line
		}
		prev, have = e, true
	}
	return "", 0
}

// path is a line table file's name as gdb names it: relative to the
// compilation directory when the file is under it (examples/hang/hang.c,
// as the compiler was given it), else as the table has it.
func (u *unit) path(f *dwarf.LineFile) string {
	if f == nil {
		return ""
	}
	if u.dir != "" && filepath.IsAbs(f.Name) {
		if rel, ok := strings.CutPrefix(f.Name, u.dir+"/"); ok {
			return rel
		}
	}
	return f.Name
}
