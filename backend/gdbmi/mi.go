package gdbmi

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Kind says which of the three shapes of GDB/MI value a Value has.
type Kind uint8

// Value kinds.
const (
	String Kind = iota // a C string: Str
	Tuple              // {name=value,...}: Fields
	List               // [value,...] or [name=value,...]: Fields, names empty for plain values
)

// Value is a GDB/MI value.
type Value struct {
	Kind   Kind
	Str    string
	Fields []Field
}

// Field is one name=value pair; in a list of plain values Name is empty.
type Field struct {
	Name  string
	Value Value
}

// Get returns the first field called name, or the zero Value.
func (v Value) Get(name string) Value {
	for _, f := range v.Fields {
		if f.Name == name {
			return f.Value
		}
	}
	return Value{}
}

// S returns the string field called name ("" when absent).
func (v Value) S(name string) string { return v.Get(name).Str }

// Int returns the field called name as an integer (0 when absent or not a
// number).
func (v Value) Int(name string) int {
	n, _ := strconv.Atoi(v.Get(name).Str)
	return n
}

// Has reports whether v has a field called name.
func (v Value) Has(name string) bool {
	for _, f := range v.Fields {
		if f.Name == name {
			return true
		}
	}
	return false
}

// Items returns the elements of a list or tuple.
func (v Value) Items() []Value {
	out := make([]Value, len(v.Fields))
	for i, f := range v.Fields {
		out[i] = f.Value
	}
	return out
}

// Record types, by the character that starts them in GDB/MI output.
const (
	Result  = '^' // the answer to a command: Class done, running, error, exit
	Exec    = '*' // the program's state changed: stopped, running
	Status  = '+' // progress of a long command
	Notify  = '=' // news: breakpoint-modified, library-loaded, thread-group-exited, …
	Console = '~' // text for the user, from CLI commands
	Target  = '@' // output of a remote target
	Log     = '&' // gdb's own messages, such as the text of an error
	Prompt  = '(' // the "(gdb)" line that ends a batch of output
)

// Record is one line of GDB/MI output.
type Record struct {
	Type    byte   // one of Result, Exec, Status, Notify, Console, Target, Log, Prompt
	Token   uint64 // the token of the command it answers, when HasToken
	HasTok  bool
	Class   string // result and async records: done, stopped, library-loaded, …
	Results Value  // result and async records: a tuple of the results
	Text    string // stream records: the decoded text
	// During is the token of the command gdb was running when it printed
	// an async record (0: none), which a record it printed on its own
	// shares by chance.
	During uint64
}

// ErrSyntax is wrapped by every parse error.
var ErrSyntax = errors.New("gdb/mi syntax")

// maxDepth bounds nesting so that hostile input cannot exhaust the stack.
const maxDepth = 256

// Parse reads one line of GDB/MI output (without its line end).
func Parse(line string) (Record, error) {
	line = strings.TrimRight(line, "\r\n")
	if strings.HasPrefix(line, "(gdb)") && strings.TrimSpace(line) == "(gdb)" {
		return Record{Type: Prompt}, nil
	}
	p := &parser{s: line}
	var r Record
	start := p.i
	for p.i < len(p.s) && p.s[p.i] >= '0' && p.s[p.i] <= '9' {
		p.i++
	}
	if p.i > start {
		tok, err := strconv.ParseUint(p.s[start:p.i], 10, 64)
		if err != nil {
			return r, p.errorf("bad token %q", p.s[start:p.i])
		}
		r.Token, r.HasTok = tok, true
	}
	if p.i >= len(p.s) {
		return r, p.errorf("empty record")
	}
	r.Type = p.s[p.i]
	p.i++
	switch r.Type {
	case Console, Target, Log:
		if r.HasTok {
			return r, p.errorf("stream record with a token")
		}
		text, err := p.cstring()
		if err != nil {
			return r, err
		}
		r.Text = text
	case Result, Exec, Status, Notify:
		r.Class = p.word()
		if r.Class == "" {
			return r, p.errorf("record without a class")
		}
		r.Results.Kind = Tuple
		for p.i < len(p.s) {
			if err := p.expect(','); err != nil {
				return r, err
			}
			f, err := p.result(0)
			if err != nil {
				return r, err
			}
			r.Results.Fields = append(r.Results.Fields, f)
		}
	default:
		return r, p.errorf("unknown record type %q", r.Type)
	}
	if p.i != len(p.s) {
		return r, p.errorf("trailing text")
	}
	return r, nil
}

type parser struct {
	s string
	i int
}

func (p *parser) errorf(format string, args ...any) error {
	return fmt.Errorf("%w at column %d: %s", ErrSyntax, p.i+1, fmt.Sprintf(format, args...))
}

func (p *parser) expect(c byte) error {
	if p.i >= len(p.s) || p.s[p.i] != c {
		return p.errorf("want %q", c)
	}
	p.i++
	return nil
}

// word reads a class or variable name: anything up to = , { } [ ] or ".
func (p *parser) word() string {
	start := p.i
	for p.i < len(p.s) && !strings.ContainsRune("=,{}[]\"", rune(p.s[p.i])) {
		p.i++
	}
	return p.s[start:p.i]
}

func (p *parser) result(depth int) (Field, error) {
	name := p.word()
	if name == "" {
		return Field{}, p.errorf("want a name")
	}
	if err := p.expect('='); err != nil {
		return Field{}, err
	}
	v, err := p.value(depth + 1)
	return Field{Name: name, Value: v}, err
}

func (p *parser) value(depth int) (Value, error) {
	if depth > maxDepth {
		return Value{}, p.errorf("nested too deep")
	}
	if p.i >= len(p.s) {
		return Value{}, p.errorf("want a value")
	}
	switch p.s[p.i] {
	case '"':
		s, err := p.cstring()
		return Value{Kind: String, Str: s}, err
	case '{':
		p.i++
		return p.tuple(depth)
	case '[':
		p.i++
		return p.list(depth)
	}
	return Value{}, p.errorf("want a value, got %q", p.s[p.i])
}

// tuple reads {name=value,...} after its '{'.
func (p *parser) tuple(depth int) (Value, error) {
	return p.items(Tuple, '}', func() (Field, error) { return p.result(depth) })
}

// list reads [value,...] or [name=value,...] after its '['.
func (p *parser) list(depth int) (Value, error) {
	return p.items(List, ']', func() (Field, error) {
		if p.i >= len(p.s) {
			return Field{}, p.errorf("unterminated list")
		}
		if c := p.s[p.i]; c == '"' || c == '{' || c == '[' {
			v, err := p.value(depth + 1)
			return Field{Value: v}, err
		}
		return p.result(depth)
	})
}

// items reads the comma-separated items of a tuple or list, each with
// item, up to its closing byte.
func (p *parser) items(kind Kind, closing byte, item func() (Field, error)) (Value, error) {
	v := Value{Kind: kind}
	if p.i < len(p.s) && p.s[p.i] == closing {
		p.i++
		return v, nil
	}
	for {
		f, err := item()
		if err != nil {
			return v, err
		}
		v.Fields = append(v.Fields, f)
		if p.i < len(p.s) && p.s[p.i] == ',' {
			p.i++
			continue
		}
		return v, p.expect(closing)
	}
}

// cstring reads a C string as gdb writes it: backslash escapes for quotes,
// backslashes, the usual control characters, and octal for other bytes.
func (p *parser) cstring() (string, error) {
	if err := p.expect('"'); err != nil {
		return "", err
	}
	var b strings.Builder
	for p.i < len(p.s) {
		c := p.s[p.i]
		p.i++
		switch c {
		case '"':
			return b.String(), nil
		case '\\':
			if p.i >= len(p.s) {
				return "", p.errorf("string ends in a backslash")
			}
			e := p.s[p.i]
			p.i++
			switch e {
			case 'n':
				b.WriteByte('\n')
			case 't':
				b.WriteByte('\t')
			case 'r':
				b.WriteByte('\r')
			case 'a':
				b.WriteByte('\a')
			case 'b':
				b.WriteByte('\b')
			case 'f':
				b.WriteByte('\f')
			case 'v':
				b.WriteByte('\v')
			case 'e':
				b.WriteByte(0x1b)
			case '0', '1', '2', '3', '4', '5', '6', '7':
				n := int(e - '0')
				for k := 0; k < 2 && p.i < len(p.s) && p.s[p.i] >= '0' && p.s[p.i] <= '7'; k++ {
					n = n*8 + int(p.s[p.i]-'0')
					p.i++
				}
				b.WriteByte(byte(n))
			default:
				b.WriteByte(e) // \" \\ and anything gdb escapes needlessly
			}
		default:
			b.WriteByte(c)
		}
	}
	return "", p.errorf("unterminated string")
}

// Quote returns s as a GDB/MI C string, for arguments that may hold spaces
// or quotes (expressions, file names).
func Quote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '"', '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case '\n':
			b.WriteString(`\n`)
		case '\t':
			b.WriteString(`\t`)
		default:
			if c < 0x20 || c == 0x7f {
				fmt.Fprintf(&b, `\%03o`, c)
			} else {
				b.WriteByte(c)
			}
		}
	}
	b.WriteByte('"')
	return b.String()
}
