package routing

import (
	"cmp"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// MaxSize is the largest number of servers a routing file or a Tree may
// have. It is far beyond any machine sdm runs on, and keeps a corrupt header
// from making the parser allocate gigabytes.
const MaxSize = 1 << 24

// maxHostLen is the DNS limit on a host name; PTP uses the same.
const maxHostLen = 255

// Entry is one line of a routing file: where the server with the given index
// listens.
type Entry struct {
	Index int    // the server's rank, 0..N-1
	Host  string // host name or IP address, as the launcher saw it
	Port  int    // TCP port, 1..65535
}

// Addr returns the entry's address in the form net.Dial expects, with IPv6
// literals bracketed.
func (e Entry) Addr() string {
	return net.JoinHostPort(e.Host, strconv.Itoa(e.Port))
}

// Table is a complete routing table: Entries[i].Index == i for all i, and
// len(Entries) == Size(). Tables returned by this package always hold these;
// a Table built by hand should go through NewTable.
type Table struct {
	Entries []Entry // indexed by rank
	// name and lines say where a parsed table's entries are: the file's
	// name and each entry's line, or nil when entry i is on line i+2 (a
	// file in order).
	name   string
	parsed bool
	lines  []int32
}

// Where says where the entry of index is, "file:line", for messages
// about it; "routing table" for a table that was not parsed.
func (t *Table) Where(index int) string {
	if t == nil || !t.parsed || index < 0 || index >= len(t.Entries) {
		return "routing table"
	}
	return fmt.Sprintf("%s:%d", t.name, t.line(index))
}

// line is the line of a parsed table's entry of index.
func (t *Table) line(index int) int {
	if t.lines != nil {
		return int(t.lines[index])
	}
	return index + 2
}

// Size returns N, the number of servers in the table.
func (t *Table) Size() int {
	if t == nil {
		return 0
	}
	return len(t.Entries)
}

// Lookup returns the entry of the server with the given index, and false if
// the table has no such server.
func (t *Table) Lookup(index int) (Entry, bool) {
	if t == nil || index < 0 || index >= len(t.Entries) {
		return Entry{}, false
	}
	if e := t.Entries[index]; e.Index == index {
		return e, true
	}
	// Only a hand-built table breaks the invariant; answer correctly anyway
	// rather than return another server's address.
	for _, e := range t.Entries {
		if e.Index == index {
			return e, true
		}
	}
	return Entry{}, false
}

// NewTable builds a table from entries in any order. It fails if the indices
// are not exactly 0..len(entries)-1 or an entry has a host or port that
// Parse would reject. The caller's slice is not modified.
func NewTable(entries []Entry) (*Table, error) {
	n := len(entries)
	if err := checkSize(n); err != nil {
		return nil, fmt.Errorf("routing: %w", err)
	}
	sorted := slices.Clone(entries)
	slices.SortFunc(sorted, func(a, b Entry) int { return cmp.Compare(a.Index, b.Index) })
	// Report a bad index before a duplicate: with an index out of range, a
	// "duplicate" or "missing" complaint would point at the wrong entry.
	for _, e := range []Entry{sorted[0], sorted[n-1]} {
		if e.Index < 0 || e.Index >= n {
			return nil, fmt.Errorf("routing: index %d out of range 0-%d", e.Index, n-1)
		}
	}
	for i := 1; i < n; i++ {
		if sorted[i].Index == sorted[i-1].Index {
			return nil, fmt.Errorf("routing: duplicate index %d", sorted[i].Index)
		}
	}
	t := &Table{Entries: sorted}
	if err := t.validate(); err != nil {
		return nil, fmt.Errorf("routing: %w", err)
	}
	return t, nil
}

// validate checks the invariants of a Table with the same rules Parse
// applies, so that whatever this package writes it can read back.
func (t *Table) validate() error {
	if t == nil {
		return errors.New("nil table")
	}
	n := len(t.Entries)
	if err := checkSize(n); err != nil {
		return err
	}
	for i, e := range t.Entries {
		if e.Index != i {
			if e.Index < 0 || e.Index >= n {
				return fmt.Errorf("index %d out of range 0-%d", e.Index, n-1)
			}
			return fmt.Errorf("Entries[%d] has index %d: entries must be in index order, each index once (NewTable sorts them)", i, e.Index)
		}
		if msg := checkHost(e.Host); msg != "" {
			return fmt.Errorf("index %d: %s", i, msg)
		}
		if e.Port < 1 || e.Port > 65535 {
			return fmt.Errorf("index %d: port %d out of range 1-65535", i, e.Port)
		}
	}
	return nil
}

func checkSize(n int) error {
	if n < 1 {
		return errors.New("table has no entries")
	}
	if n > MaxSize {
		return fmt.Errorf("table has %d entries, at most %d allowed", n, MaxSize)
	}
	return nil
}

// checkHost returns what is wrong with a host name, or "" if nothing is.
// Whitespace would split the field when the file is read back, and control
// characters have no place in a host name and would garble error messages.
func checkHost(h string) string {
	if h == "" {
		return "empty host"
	}
	if len(h) > maxHostLen {
		return fmt.Sprintf("host is %d bytes long, at most %d allowed", len(h), maxHostLen)
	}
	if !utf8.ValidString(h) {
		return fmt.Sprintf("host %s is not valid UTF-8", quote([]byte(h)))
	}
	for _, r := range h {
		if r < 0x21 || unicode.IsControl(r) || unicode.IsSpace(r) {
			return fmt.Sprintf("host %s contains whitespace or a control character", quote([]byte(h)))
		}
	}
	return ""
}

// Distinct fails, naming both entries' lines, when two servers of the
// table are at the same host and port: they cannot both listen there,
// and a child would reach whichever did. It sorts a copy of the indices,
// so it is the master's to call, once for the job, not every server's.
func (t *Table) Distinct() error {
	order := make([]int32, len(t.Entries))
	for i := range order {
		order[i] = int32(i)
	}
	at := func(i int32) (string, int) { return t.Entries[i].Host, t.Entries[i].Port }
	slices.SortFunc(order, func(a, b int32) int {
		ha, pa := at(a)
		hb, pb := at(b)
		return cmp.Or(strings.Compare(ha, hb), cmp.Compare(pa, pb), cmp.Compare(t.line(int(a)), t.line(int(b))))
	})
	for k := 1; k < len(order); k++ {
		a, b := order[k-1], order[k]
		if ha, pa := at(a); ha == t.Entries[b].Host && pa == t.Entries[b].Port {
			return fmt.Errorf("%s: server %d is at %s, as server %d is (%s)", t.Where(int(b)),
				b, net.JoinHostPort(ha, strconv.Itoa(pa)), a, t.Where(int(a)))
		}
	}
	return nil
}
