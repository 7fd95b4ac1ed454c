package routing

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

func TestWriteTo(t *testing.T) {
	tab, err := NewTable([]Entry{{1, "b", 2}, {0, "a", 1}})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	n, err := tab.WriteTo(&buf)
	if err != nil {
		t.Fatal(err)
	}
	const want = "2\n0 a 1\n1 b 2\n"
	if buf.String() != want || n != int64(len(want)) {
		t.Errorf("wrote %d bytes %q, want %q", n, buf.String(), want)
	}
}

func TestWriteFileRoundTrip(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "routes")
	var entries []Entry
	for i := range 1000 {
		entries = append(entries, Entry{Index: 999 - i, Host: "node" + string(rune('a'+i%26)), Port: 1 + i})
	}
	tab, err := NewTable(entries)
	if err != nil {
		t.Fatal(err)
	}
	// Twice: the second write replaces the first.
	for range 2 {
		if err := writeFile(path, tab); err != nil {
			t.Fatal(err)
		}
	}
	got, err := ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.Entries, tab.Entries) {
		t.Error("table read back differs from the one written")
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o644 {
		t.Errorf("mode %v, want 0644", fi.Mode().Perm())
	}
	assertOnlyFile(t, dir, "routes")
}

func TestWriteFileRefusesInvalid(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "routes")
	for _, tab := range []*Table{
		nil,
		{},
		{Entries: []Entry{{0, "a", 0}}},
		{Entries: []Entry{{1, "a", 1}, {0, "a", 1}}},
		{Entries: []Entry{{0, "a", 1}, {0, "a", 1}}},
	} {
		err := writeFile(path, tab)
		if err == nil || !strings.HasPrefix(err.Error(), "writing routing file "+path+": ") {
			t.Errorf("writeFile(%v) error = %v, want one naming the file", tab, err)
		}
	}
	assertOnlyFile(t, dir)
}

func TestWriteFileNoDirectory(t *testing.T) {
	path := filepath.Join(t.TempDir(), "missing", "routes")
	tab, _ := NewTable([]Entry{{0, "a", 1}})
	if err := writeFile(path, tab); err == nil || !strings.Contains(err.Error(), path) {
		t.Errorf("error = %v, want one naming %s", err, path)
	}
}

// assertOnlyFile checks that dir holds exactly the named files, so that no
// temporary file was left behind.
func assertOnlyFile(t *testing.T, dir string, names ...string) {
	t.Helper()
	des, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, de := range des {
		got = append(got, de.Name())
	}
	if !slices.Equal(got, names) {
		t.Errorf("directory holds %q, want %q", got, names)
	}
}
