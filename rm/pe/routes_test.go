package pe

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRoutes(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "host.list"), []byte("! a comment\nh1\nh2\n\n* another\nh1\n"), 0o644)
	lookup := func(k string) (string, bool) {
		v, ok := map[string]string{"MP_PROCS": "3"}[k]
		return v, ok
	}
	table, err := Routes(lookup, dir, 30000)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range table.Entries {
		got = append(got, e.Addr())
	}
	if strings.Join(got, " ") != "h1:30000 h2:30000 h1:30001" {
		t.Fatalf("routes: %v", got)
	}
	short := func(k string) (string, bool) { return map[string]string{"MP_PROCS": "5"}[k], k == "MP_PROCS" }
	if _, err := Routes(short, dir, 30000); err == nil || !strings.Contains(err.Error(), "3 hosts for 5 tasks") {
		t.Fatalf("too few hosts: %v", err)
	}
	none := func(string) (string, bool) { return "", false }
	if _, err := Routes(none, dir, 30000); err == nil || !strings.Contains(err.Error(), "MP_PROCS") {
		t.Fatalf("not a POE task: %v", err)
	}
}
