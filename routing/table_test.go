package routing

import (
	"reflect"
	"strings"
	"testing"
)

func TestNewTable(t *testing.T) {
	in := []Entry{{2, "c", 3}, {0, "a", 1}, {1, "b", 2}}
	tab, err := NewTable(in)
	if err != nil {
		t.Fatal(err)
	}
	want := []Entry{{0, "a", 1}, {1, "b", 2}, {2, "c", 3}}
	if !reflect.DeepEqual(tab.Entries, want) {
		t.Errorf("entries = %v, want %v", tab.Entries, want)
	}
	if in[0].Index != 2 {
		t.Error("NewTable reordered the caller's slice")
	}
}

func TestNewTableErrors(t *testing.T) {
	tests := []struct {
		name    string
		entries []Entry
		want    string
	}{
		{"none", nil, "routing: table has no entries"},
		{"duplicate", []Entry{{0, "a", 1}, {0, "a", 2}, {1, "a", 3}}, "routing: duplicate index 0"},
		{"out of range", []Entry{{0, "a", 1}, {1, "a", 2}, {5, "a", 3}}, "routing: index 5 out of range 0-2"},
		{"duplicate in range", []Entry{{0, "a", 1}, {1, "a", 2}, {1, "a", 3}, {3, "a", 4}}, "routing: duplicate index 1"},
		{"negative", []Entry{{-1, "a", 1}}, "routing: index -1 out of range 0-0"},
		{"empty host", []Entry{{0, "", 1}}, "routing: index 0: empty host"},
		{"host with space", []Entry{{0, "a b", 1}}, `routing: index 0: host "a b" contains whitespace or a control character`},
		{"long host", []Entry{{0, strings.Repeat("h", 256), 1}}, "routing: index 0: host is 256 bytes long, at most 255 allowed"},
		{"port 0", []Entry{{0, "a", 0}}, "routing: index 0: port 0 out of range 1-65535"},
		{"port 65536", []Entry{{0, "a", 65536}}, "routing: index 0: port 65536 out of range 1-65535"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewTable(tt.entries)
			if err == nil || err.Error() != tt.want {
				t.Errorf("error = %v, want %q", err, tt.want)
			}
		})
	}
}

func TestNilTable(t *testing.T) {
	var tab *Table
	if tab.Size() != 0 {
		t.Error("nil table has a size")
	}
	if _, ok := tab.Lookup(0); ok {
		t.Error("nil table has an entry")
	}
	if _, err := tab.WriteTo(new(strings.Builder)); err == nil {
		t.Error("nil table was written")
	}
}

// A hand-built table out of order still answers lookups correctly.
func TestLookupUnsorted(t *testing.T) {
	tab := &Table{Entries: []Entry{{1, "b", 2}, {0, "a", 1}}}
	if e, ok := tab.Lookup(0); !ok || e.Host != "a" {
		t.Errorf("Lookup(0) = %v, %v", e, ok)
	}
}

func TestAddr(t *testing.T) {
	for _, tt := range []struct {
		e    Entry
		want string
	}{
		{Entry{0, "node1", 80}, "node1:80"},
		{Entry{0, "fe80::1", 5000}, "[fe80::1]:5000"},
	} {
		if got := tt.e.Addr(); got != tt.want {
			t.Errorf("%v.Addr() = %q, want %q", tt.e, got, tt.want)
		}
	}
}

// Two servers at one host and port are refused, both lines named; the
// same port on two hosts, or two ports on one, is fine.
func TestDistinctRefusesSharedAddresses(t *testing.T) {
	parse := func(text string) *Table {
		t.Helper()
		table, err := Parse(strings.NewReader(text), "routes")
		if err != nil {
			t.Fatal(err)
		}
		return table
	}
	if err := parse("3\n0 a 5000\n1 b 5000\n2 a 5001\n").Distinct(); err != nil {
		t.Errorf("distinct addresses: %v", err)
	}
	err := parse("3\n2 a 5000\n0 b 5000\n1 a 5000\n").Distinct()
	if err == nil || err.Error() != "routes:4: server 1 is at a:5000, as server 2 is (routes:2)" {
		t.Errorf("a shared address: %v", err)
	}
}
