package gdbmi

import "testing"

func TestGlobalNames(t *testing.T) {
	for name, want := range map[string]bool{"counter": true, "_private": true, "x9": true,
		"counter.0": false, "9x": false, "": false, "stdout@GLIBC_2.2.5": false} {
		if identifier(name) != want {
			t.Errorf("identifier(%q) = %v", name, !want)
		}
	}
	for name, want := range map[string]bool{"__dso_handle": true, "_IO_stdin_used": true, "_private": false, "counter": false} {
		if reserved(name) != want {
			t.Errorf("reserved(%q) = %v", name, !want)
		}
	}
	if _, ok := dataObjects(0); ok {
		t.Error("names of no process")
	}
}
