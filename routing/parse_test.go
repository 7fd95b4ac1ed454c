package routing

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"unsafe"
)

func parseString(s string) (*Table, error) {
	return Parse(strings.NewReader(s), "routes")
}

func TestParseValid(t *testing.T) {
	// Out of order, tabs and runs of spaces, an IPv6 host, trailing blank
	// lines: all allowed.
	in := "3\n2\tnode02 50000\n0  node01   50000\n1 ::1 50001\n\n  \n"
	tab, err := parseString(in)
	if err != nil {
		t.Fatal(err)
	}
	want := []Entry{{0, "node01", 50000}, {1, "::1", 50001}, {2, "node02", 50000}}
	if !reflect.DeepEqual(tab.Entries, want) {
		t.Fatalf("entries = %v, want %v", tab.Entries, want)
	}
	if w := tab.Where(0) + " " + tab.Where(2) + " " + tab.Where(3); w != "routes:3 routes:2 routing table" {
		t.Errorf("where the entries are: %s", w)
	}
	if tab.Size() != 3 {
		t.Errorf("Size = %d, want 3", tab.Size())
	}
	if e, ok := tab.Lookup(1); !ok || e.Addr() != "[::1]:50001" {
		t.Errorf("Lookup(1) = %v %v, want [::1]:50001", e.Addr(), ok)
	}
	for _, i := range []int{-1, 3} {
		if _, ok := tab.Lookup(i); ok {
			t.Errorf("Lookup(%d) found an entry", i)
		}
	}
}

func TestParseCRLF(t *testing.T) {
	tab, err := parseString("2\r\n1 b 2\r\n0 a 1\r\n\r\n")
	if err != nil {
		t.Fatal(err)
	}
	want := []Entry{{0, "a", 1}, {1, "b", 2}}
	if !reflect.DeepEqual(tab.Entries, want) {
		t.Fatalf("entries = %v, want %v", tab.Entries, want)
	}
}

// An entry is complete only when its line ends: a writer that is not done
// may be in the middle of the last port.
func TestParseNoFinalNewline(t *testing.T) {
	for in, want := range map[string]string{
		"1\n0 a 1":                "routes: has 0 of 1 entries (line 2 is partly written)",
		"2\n0 h 1\n1 127.0.0.1 4": "routes: has 1 of 2 entries (line 3 is partly written)",
		"2\r\n0 h 1\r\n1 h 4\r":   "routes: has 1 of 2 entries (line 3 is partly written)",
		"2\n0 h 1\n1 h\xc3":       "routes: has 1 of 2 entries (line 3 is partly written)",
		"1\n0 a 1 extra":          `routes:2: trailing garbage "extra" after the port`,
	} {
		tab, err := parseString(in)
		if err == nil || err.Error() != want {
			t.Errorf("%q: %v %v, want %q", in, tab, err, want)
		}
	}
	if _, err := parseString("2\n0 h 1\n1 127.0.0.1 4\n"); err != nil {
		t.Errorf("the same file, finished: %v", err)
	}
}

func TestParseErrors(t *testing.T) {
	long := strings.Repeat("h", 256)
	tests := []struct {
		name       string
		in         string
		want       string // the whole message, or a prefix of it ending in "..."
		incomplete bool
	}{
		{"empty", "", "routes: file is empty", true},
		{"fewer entries", "8\n0 a 1\n1 a 2\n2 a 3\n3 a 4\n4 a 5\n", "routes: has 5 of 8 entries", true},
		{"header only", "2\n", "routes: has 0 of 2 entries", true},
		{"line cut short", "2\n0 a 1\n1 a", "routes: has 1 of 2 entries (line 3 is partly written)", true},
		{"missing header", "\n0 a 1\n", "routes:1: missing header: the first line must hold the number of servers", false},
		{"non-numeric header", "two\n0 a 1\n1 a 2\n", `routes:1: header "two" is not a number of servers`, false},
		{"signed header", "+1\n0 a 1\n", `routes:1: header "+1" is not a number of servers`, false},
		{"zero header", "0\n", "routes:1: number of servers must be at least 1, got 0", false},
		{"huge header", "99999999999999999999\n", `routes:1: number of servers "99999999999999999999" exceeds the maximum 16777216`, false},
		{"header garbage", "1 2\n0 a 1\n", `routes:1: trailing garbage "2" after the number of servers`, false},
		{"more entries", "1\n0 a 1\n1 a 2\n", "routes:3: more than the 1 entries the header announces", false},
		{"duplicate index", "3\n0 a 1\n1 a 2\n0 b 3\n", "routes:4: duplicate index 0 (first on line 2)", false},
		{"index out of range", "2\n0 a 1\n2 a 2\n", "routes:3: index 2 out of range 0-1", false},
		{"negative index", "2\n0 a 1\n-1 a 2\n", `routes:3: index "-1" is not a number`, false},
		{"non-numeric index", "2\n0 a 1\nx a 2\n", `routes:3: index "x" is not a number`, false},
		{"port 0", "2\n0 a 1\n1 a 0\n", "routes:3: port 0 out of range 1-65535", false},
		{"port 70000", "4\n0 a 1\n1 a 2\n2 a 3\n3 a 70000\n", "routes:5: port 70000 out of range 1-65535", false},
		{"port abc", "1\n0 a abc\n", `routes:2: port "abc" is not a number`, false},
		{"host 256 bytes", "1\n0 " + long + " 1\n", "routes:2: host is 256 bytes long, at most 255 allowed", false},
		{"host control char", "1\n0 a\x01b 1\n", `routes:2: host "a\x01b" contains whitespace or a control character`, false},
		{"host C1 control char", "1\n0 a\u009bb 1\n", `routes:2: host "a\u009bb" contains whitespace or a control character`, false},
		{"host invalid UTF-8", "2\n0 a 1\n1 a\xffb 1\n", `routes:3: host "a\xffb" is not valid UTF-8`, false},
		// A host equal to the one before is checked once; one that differs
		// after a run of it is checked again.
		{"host control char after a run", "4\n0 a 1\n1 a 2\n2 a\x01 3\n3 a 4\n", `routes:4: host "a\x01" contains whitespace or a control character`, false},
		{"trailing garbage", "1\n0 a 1 extra\n", `routes:2: trailing garbage "extra" after the port`, false},
		{"missing port", "2\n0 a\n1 a 2\n", `routes:2: missing port after host "a"`, false},
		{"missing host and port", "2\n0\n1 a 2\n", `routes:2: missing host and port after index "0"`, false},
		{"blank line in the middle", "2\n0 a 1\n\n1 a 2\n", "routes:3: blank line before line 4; only the end of the file may be blank", false},
		{"blank line after all entries", "1\n0 a 1\n\n0 a 1\n", "routes:3: blank line before line 4; only the end of the file may be blank", false},
		{"line too long", "1\n0 a 1" + strings.Repeat(" ", maxLine) + "\n", "routes:2: line longer than 65536 bytes", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tab, err := parseString(tt.in)
			if err == nil {
				t.Fatalf("Parse succeeded with %v, want error %q", tab.Entries, tt.want)
			}
			if tab != nil {
				t.Errorf("Parse returned a table along with error %v", err)
			}
			if err.Error() != tt.want {
				t.Errorf("error = %q\n            want %q", err, tt.want)
			}
			if errors.Is(err, ErrIncomplete) != tt.incomplete {
				t.Errorf("errors.Is(%v, ErrIncomplete) = %v, want %v", err, !tt.incomplete, tt.incomplete)
			}
		})
	}
}

func TestReadFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "routes")
	if _, err := ReadFile(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: error %v, want os.ErrNotExist", err)
	}
	if err := os.WriteFile(path, []byte("2\n0 a 1\n1 a 0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := ReadFile(path)
	if want := path + ":3: port 0 out of range 1-65535"; err == nil || err.Error() != want {
		t.Errorf("error = %v, want %q", err, want)
	}
	if _, err := ReadFile(filepath.Dir(path)); err == nil || !strings.Contains(err.Error(), filepath.Dir(path)) {
		t.Errorf("reading a directory: error %v, want one naming it", err)
	}
}

// A lying header must not cost memory proportional to the number it claims.
func TestParseHugeHeaderIsCheap(t *testing.T) {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	if _, err := parseString("16777216\n0 a 1\n"); !errors.Is(err, ErrIncomplete) {
		t.Fatalf("error %v, want ErrIncomplete", err)
	}
	runtime.ReadMemStats(&after)
	// The index bitmap takes N/8 bytes, 2 MiB here; entries are not
	// preallocated.
	if got := after.TotalAlloc - before.TotalAlloc; got > 4<<20 {
		t.Errorf("parsing allocated %d bytes", got)
	}
}

func TestParseSharesHostStrings(t *testing.T) {
	tab, err := parseString("3\n0 node 1\n1 node 2\n2 node 3\n")
	if err != nil {
		t.Fatal(err)
	}
	if unsafe.StringData(tab.Entries[0].Host) != unsafe.StringData(tab.Entries[2].Host) {
		t.Error("equal consecutive hosts were not shared")
	}
}

// Every server parses the routing file at its start, and what that
// allocates stays: a file of 1024 entries in order, as launchers write
// them, costs little more than its entries (32 KB).
func TestParseIsFrugal(t *testing.T) {
	var b strings.Builder
	fmt.Fprintf(&b, "1024\n")
	for i := range 1024 {
		fmt.Fprintf(&b, "%d node-%03d.cluster.example %d\n", i, i/128, 50000+i)
	}
	in := b.String()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	tab, err := parseString(in)
	runtime.ReadMemStats(&after)
	if err != nil || tab.Size() != 1024 || tab.Entries[517].Port != 50517 || tab.Where(517) != "routes:519" {
		t.Fatalf("%v, %v", tab, err)
	}
	if got := after.TotalAlloc - before.TotalAlloc; got > 64<<10 {
		t.Errorf("parsing %d bytes allocated %d bytes", len(in), got)
	}
}

// A file of a large job costs its entries and no more: room for them all
// is made at once (growing it would leave megabytes of garbage in every
// server), as far as the file's size can hold them, so that a header
// that overstates them costs nothing more.
func TestReadFileOfALargeJobIsFrugal(t *testing.T) {
	const n = 200_000
	dir := t.TempDir()
	var b strings.Builder
	fmt.Fprintf(&b, "%d\n", n)
	for i := range n {
		fmt.Fprintf(&b, "%d node-%04d %d\n", i, i/128, 20000+i%40000)
	}
	for _, c := range []struct {
		name, text string
		limit      uint64
	}{
		// The entries are 6.4 MB, the hosts' names 16 KB.
		{"large", b.String(), 7 << 20},
		// The index bitmap is 2 MB.
		{"lying", "16777216\n0 a 1\n", 3 << 20},
	} {
		path := filepath.Join(dir, c.name)
		if err := os.WriteFile(path, []byte(c.text), 0o600); err != nil {
			t.Fatal(err)
		}
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		tab, err := ReadFile(path)
		runtime.ReadMemStats(&after)
		if c.name == "large" && (err != nil || tab.Size() != n || tab.Where(n-1) != fmt.Sprintf("%s:%d", path, n+1)) {
			t.Fatalf("%s: %v", c.name, err)
		}
		if got := after.TotalAlloc - before.TotalAlloc; got > c.limit {
			t.Errorf("reading the %s file allocated %d bytes, want at most %d", c.name, got, c.limit)
		}
	}
}

// A line longer than what the parse reads at a time is read whole.
func TestParseLongLine(t *testing.T) {
	in := "2\n0 h 1" + strings.Repeat(" ", 3*readBuffer) + "\n1 h 2\n"
	tab, err := parseString(in)
	if err != nil || tab.Entries[0].Port != 1 || tab.Entries[1].Port != 2 || tab.Where(1) != "routes:3" {
		t.Fatalf("%v, %v", tab, err)
	}
}
