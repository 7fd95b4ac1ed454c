package routing

import (
	"bytes"
	"reflect"
	"strings"
	"testing"
)

// FuzzParse checks that no input makes Parse panic or return a table that
// breaks its invariants, that every error names the file, and that whatever
// parses survives a write and a second parse unchanged.
func FuzzParse(f *testing.F) {
	f.Add([]byte("2\n1 b 2\n0 a 1\n"))
	f.Add([]byte("1\n0 a 1"))
	f.Add([]byte("3\n0 a 1\n1 a"))
	f.Add([]byte("2\n0 a 1\n\n1 a 2\n"))
	f.Add([]byte("2\n0 h 1\n1 127.0.0.1 4"))
	f.Add([]byte("2\r\n0 h 1\r\n1 h\xc3\xa9 4\r\n"))
	f.Add([]byte("1\n0 h\xff 1\n"))
	f.Add([]byte("2\n1 h 7\n0 h 7\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		tab, err := Parse(bytes.NewReader(data), "fuzz")
		if err != nil {
			if tab != nil {
				t.Fatal("table returned with an error")
			}
			if !strings.HasPrefix(err.Error(), "fuzz:") {
				t.Fatalf("error %q does not name the file", err)
			}
			return
		}
		for i, e := range tab.Entries {
			if e.Index != i {
				t.Fatalf("Entries[%d].Index = %d", i, e.Index)
			}
		}
		if err := tab.Distinct(); err != nil && !strings.HasPrefix(err.Error(), "fuzz:") {
			t.Fatalf("Distinct: %q does not name the file", err)
		}
		var buf bytes.Buffer
		if _, err := tab.WriteTo(&buf); err != nil {
			t.Fatalf("WriteTo: %v", err)
		}
		again, err := Parse(&buf, "fuzz")
		if err != nil {
			t.Fatalf("reparse of %q: %v", buf.String(), err)
		}
		if !reflect.DeepEqual(tab.Entries, again.Entries) {
			t.Fatalf("round trip changed %v into %v", tab.Entries, again.Entries)
		}
	})
}

// FuzzTree checks the tree invariants for sizes up to 5000 and every
// supported fanout up to 70.
func FuzzTree(f *testing.F) {
	f.Add(8, 0)
	f.Add(8, 1)
	f.Add(1, 0)
	f.Add(4999, 68)
	f.Add(1023, 0)
	f.Add(1024, 1)
	f.Fuzz(func(t *testing.T, n, fanout int) {
		n = 1 + int(uint(n)%5000)
		// 0 stays binomial; 1..69 become K-ary fanouts 2..70.
		if fanout = int(uint(fanout) % 70); fanout != 0 {
			fanout++
		}
		checkTree(t, Tree{Size: n, Fanout: fanout})
	})
}

// FuzzParseEntryLine checks the one-line files a master and publishing
// servers write: no panic, and every entry accepted is one a routing file
// would accept too.
func FuzzParseEntryLine(f *testing.F) {
	f.Add([]byte("8 login1 40123\n"), 9)
	f.Add([]byte("3 127.0.0.1 4"), 8)
	f.Add([]byte("0 h\xff 1\n"), 1)
	f.Add([]byte("1 a 2\r\n"), 2)
	f.Fuzz(func(t *testing.T, data []byte, n int) {
		n = 1 + int(uint(n)%1000)
		e, err := parseEntryLine("fuzz", data, n)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "fuzz:") {
				t.Fatalf("error %q does not name the file", err)
			}
			return
		}
		if e.Index < 0 || e.Index >= n || e.Port < 1 || e.Port > 65535 || checkHost(e.Host) != "" {
			t.Fatalf("accepted %q as %+v", data, e)
		}
	})
}
