package routing

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
)

// maxLine bounds a line. A valid one is under 300 bytes; the bound only keeps
// a file without newlines from being buffered whole.
const maxLine = 64 << 10

// readBuffer is what a parse reads through: every server parses the
// routing file at its start, and what the parse allocates stays resident
// in a server whose heap never reaches its first collection, so a line
// longer than it is gathered apart instead of sizing the buffer for the
// longest line allowed.
const readBuffer = 4 << 10

// Parse reads a routing file from r. The name is only used in error
// messages, which have the form "name:line: problem". A file with fewer
// complete entries than its header announces, or an empty one, yields an
// error wrapping ErrIncomplete; an entry is complete only when its line
// ends with a newline (CRLF too), so a file caught halfway through a write
// never reads as whole. Anything else that is wrong yields an error at the
// first offending line.
func Parse(r io.Reader, name string) (*Table, error) {
	return parse(r, name, -1)
}

// parse is Parse of an input of size bytes (-1: unknown), which bounds
// the entries the header may have room made for at once.
func parse(r io.Reader, name string, size int64) (*Table, error) {
	p := parser{name: name, size: size}
	br := bufio.NewReaderSize(r, readBuffer)
	var long []byte // a line longer than the buffer, gathered so far
	for {
		line, err := br.ReadSlice('\n')
		if len(long)+len(line) > maxLine {
			return nil, lineError(name, p.line+1, "line longer than %d bytes", maxLine)
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			long = append(long, line...)
			continue
		}
		if long != nil {
			line, long = append(long, line...), nil
		}
		if len(line) > 0 {
			if perr := p.add(line); perr != nil {
				return nil, perr
			}
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			var pe *fs.PathError
			if errors.As(err, &pe) {
				return nil, err // already names the file
			}
			return nil, fmt.Errorf("%s: %w", name, err)
		}
	}
	return p.finish()
}

// ReadFile reads and parses the routing file at path.
func ReadFile(path string) (*Table, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	size := int64(-1)
	if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() {
		size = fi.Size()
	}
	return parse(f, path, size)
}

type parser struct {
	name    string
	line    int     // number of the line being parsed, 1-based
	n       int     // N from the header; 0 until it has been read
	size    int64   // the input's size in bytes; -1 if unknown
	entries []Entry // in file order: entry k is on line k+2
	seen    []uint64
	blank   int  // first blank line after the header, 0 if none yet
	partial bool // the last line was cut short by a writer mid-line
}

func (p *parser) errorf(format string, args ...any) error {
	return lineError(p.name, p.line, format, args...)
}

// add parses one line, including its '\n' unless it is the last line of an
// unterminated file.
func (p *parser) add(raw []byte) error {
	p.line++
	text, terminated := bytes.CutSuffix(raw, []byte("\n"))
	text, _ = bytes.CutSuffix(text, []byte("\r"))
	if len(trimSep(text)) == 0 {
		if p.line == 1 {
			return p.errorf("missing header: the first line must hold the number of servers")
		}
		if p.blank == 0 {
			p.blank = p.line
		}
		return nil
	}
	if p.blank != 0 {
		return lineError(p.name, p.blank, "blank line before line %d; only the end of the file may be blank", p.line)
	}
	if p.line == 1 {
		return p.header(text)
	}
	return p.entry(text, terminated)
}

func (p *parser) header(text []byte) error {
	f, rest := nextField(text)
	if g := trimSep(rest); len(g) > 0 {
		return p.errorf("trailing garbage %s after the number of servers", quote(g))
	}
	n, ok := atoi(f)
	switch {
	case !ok:
		return p.errorf("header %s is not a number of servers", quote(f))
	case n < 1:
		return p.errorf("number of servers must be at least 1, got %d", n)
	case n > MaxSize:
		return p.errorf("number of servers %s exceeds the maximum %d", quote(f), MaxSize)
	}
	p.n = n
	p.seen = make([]uint64, (n+63)/64)
	// Room for every entry at once, as far as the input can hold them
	// (an entry takes 6 bytes at least): growing the slice would leave
	// every server of a job of 100k ranks megabytes of garbage, and a
	// header that overstates the entries must not make room for them.
	room := min(n, 4096)
	if p.size >= 0 {
		room = int(min(int64(n), p.size/6+1))
	}
	p.entries = make([]Entry, 0, room)
	return nil
}

func (p *parser) entry(text []byte, terminated bool) error {
	if len(p.entries) == p.n {
		return p.errorf("more than the %d entries the header announces", p.n)
	}
	fi, rest := nextField(text)
	fh, rest := nextField(rest)
	fp, rest := nextField(rest)
	if len(fp) == 0 && !terminated {
		// A prefix of a valid line can only lack fields, or end inside
		// the host (in the middle of a UTF-8 sequence, say); any other
		// problem on a cut-short line is real.
		p.partial = true
		return nil
	}
	switch {
	case len(fh) == 0:
		return p.errorf("missing host and port after index %s", quote(fi))
	case len(fp) == 0:
		return p.errorf("missing port after host %s", quote(fh))
	}
	if g := trimSep(rest); len(g) > 0 {
		return p.errorf("trailing garbage %s after the port", quote(g))
	}
	idx, ok := atoi(fi)
	if !ok {
		return p.errorf("index %s is not a number", quote(fi))
	}
	if idx >= p.n {
		return p.errorf("index %s out of range 0-%d", fi, p.n-1)
	}
	bit := uint64(1) << (idx % 64)
	if p.seen[idx/64]&bit != 0 {
		return p.errorf("duplicate index %d (first on line %d)", idx, p.firstLine(idx))
	}
	p.seen[idx/64] |= bit
	if len(fh) > maxHostLen {
		return p.errorf("host is %d bytes long, at most %d allowed", len(fh), maxHostLen)
	}
	host, again := p.host(fh)
	if !again {
		if msg := checkHost(host); msg != "" {
			return p.errorf("%s", msg)
		}
	}
	port, ok := atoi(fp)
	if !ok {
		return p.errorf("port %s is not a number", quote(fp))
	}
	if port < 1 || port > 65535 {
		return p.errorf("port %s out of range 1-65535", fp)
	}
	if !terminated {
		// An entry is complete only with its newline: a writer that is
		// not done yet may still be writing its port ("4" of "40123").
		p.partial = true
		return nil
	}
	p.entries = append(p.entries, Entry{Index: idx, Host: host, Port: port})
	return nil
}

// host converts the field to a string, sharing the previous entry's string
// when equal (again): consecutive ranks usually run on the same node, and
// at a million ranks the copies add up, as does checking each copy.
func (p *parser) host(f []byte) (host string, again bool) {
	if k := len(p.entries); k > 0 && p.entries[k-1].Host == string(f) {
		return p.entries[k-1].Host, true
	}
	return string(f), false
}

func (p *parser) firstLine(idx int) int {
	for k, e := range p.entries {
		if e.Index == idx {
			return k + 2
		}
	}
	return 0
}

func (p *parser) finish() (*Table, error) {
	if p.line == 0 {
		return nil, &incompleteError{p.name, "file is empty"}
	}
	if len(p.entries) < p.n {
		detail := fmt.Sprintf("has %d of %d entries", len(p.entries), p.n)
		if p.partial {
			detail += fmt.Sprintf(" (line %d is partly written)", p.line)
		}
		return nil, &incompleteError{p.name, detail}
	}
	if inOrder(p.entries) {
		// As launchers write them: the entries are the table already, and
		// entry i is on line i+2.
		return &Table{Entries: p.entries, name: p.name, parsed: true}, nil
	}
	// N distinct indices below N: a permutation, so placing each entry at
	// its index fills every slot.
	out, lines := make([]Entry, p.n), make([]int32, p.n)
	for k, e := range p.entries {
		out[e.Index], lines[e.Index] = e, int32(k+2)
	}
	return &Table{Entries: out, name: p.name, parsed: true, lines: lines}, nil
}

// inOrder says whether each entry is at its index.
func inOrder(entries []Entry) bool {
	for k, e := range entries {
		if e.Index != k {
			return false
		}
	}
	return true
}
