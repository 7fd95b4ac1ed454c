package routing

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A generated table has one server per host listed, in order, on ports
// of PortRange, never two on one port of one host.
func TestGenerateOneServerPerHostListed(t *testing.T) {
	hosts := []string{"a", "b", "a", "a", "c", "b"}
	table, err := Generate(hosts)
	if err != nil {
		t.Fatal(err)
	}
	lo, hi := PortRange()
	used := map[string]bool{}
	for i, h := range hosts {
		e, ok := table.Lookup(i)
		if !ok || e.Host != h || e.Port < lo || e.Port > hi || used[e.Addr()] {
			t.Errorf("entry %d: %+v, want host %s on a port of %d-%d not given before", i, e, h, lo, hi)
		}
		used[e.Addr()] = true
	}
}

func TestGenerateRefusesACrowdedHostAndABadName(t *testing.T) {
	lo, hi := PortRange()
	hosts := []string{"other"}
	for range (hi-lo)/2 + 1 {
		hosts = append(hosts, "crowded")
	}
	if _, err := Generate(hosts); err == nil || !strings.Contains(err.Error(), "too many servers on host crowded") {
		t.Errorf("%d servers on one host: %v", len(hosts)-1, err)
	}
	if _, err := Generate([]string{"a", "two words"}); err == nil {
		t.Error("a host with a space made a table")
	}
}

// Write writes the master file and the routing file, or either alone.
func TestWriteWritesTheTableAndTheMasterFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "routes")
	tab := table(t, 2)
	master := Entry{Index: 2, Host: "m", Port: 7}
	if err := Write(path, tab, &master); err != nil {
		t.Fatal(err)
	}
	if got, err := ReadFile(path); err != nil || got.Size() != 2 {
		t.Errorf("routing file: %v, %v; want 2 entries", got, err)
	}
	if got, err := ReadMaster(path, 2); err != nil || got != master {
		t.Errorf("master file: %+v, %v; want %+v", got, err, master)
	}

	onlyMaster := filepath.Join(t.TempDir(), "routes")
	if err := Write(onlyMaster, nil, &master); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(onlyMaster); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a master entry alone wrote the routing file (%v)", err)
	}
	onlyTable := filepath.Join(t.TempDir(), "routes")
	if err := Write(onlyTable, tab, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(MasterPath(onlyTable)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a table alone wrote the master file (%v)", err)
	}
}

// A master entry that cannot be written leaves the routing file unwritten:
// no server may see a table without its master.
func TestWriteRefusesABadMasterFirst(t *testing.T) {
	path := filepath.Join(t.TempDir(), "routes")
	bad := Entry{Index: 2, Host: "two words", Port: 7}
	if err := Write(path, table(t, 2), &bad); err == nil || !strings.Contains(err.Error(), MasterPath(path)) {
		t.Errorf("Write: %v, want an error naming %s", err, MasterPath(path))
	}
	if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the routing file was written without its master (%v)", err)
	}
}
