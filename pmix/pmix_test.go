package pmix

import (
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	good := `{"server":7,"nspace":"prterun-vm-7@1","procs":[{"rank":1,"host":"b","executable":"/x","pid":11},{"rank":0,"host":"a","executable":"/x","pid":10}]}`
	tab, err := parse(7, []byte(good))
	if err != nil {
		t.Fatal(err)
	}
	if len(tab.Procs) != 2 || tab.Procs[0].Host != "a" || tab.Procs[1].Pid != 11 || tab.Starter != 7 ||
		!strings.Contains(tab.Via, "prterun-vm-7@1") || !tab.PartialAttachOK || !tab.IAmStarter {
		t.Fatalf("table %+v", tab)
	}
	for in, want := range map[string]string{
		`{"nspace":"j","procs":[]}`:                                      "has no processes",
		`{"nspace":"j","procs":[{"rank":0,"pid":1},{"rank":0,"pid":2}]}`: "lists rank 0 twice",
		`{"nspace":"j","procs":[{"rank":2,"pid":1}]}`:                    "has 1 processes and a rank 2",
		`{"nspace":"j","procs":[{"rank":0,"host":"n2","pid":0}]}`:        "rank 0 on n2 no pid",
		`not json`: "sdm-pmix's answer",
	} {
		if _, err := parse(7, []byte(in)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", in, err, want)
		}
	}
}

// FuzzParse: any answer gives a table whose every rank has a pid, or an
// error; never a panic.
func FuzzParse(f *testing.F) {
	f.Add([]byte(`{"nspace":"j","procs":[{"rank":0,"host":"a","executable":"/x","pid":1}]}`))
	f.Add([]byte(`{"nspace":"j","procs":[{"rank":-1,"pid":1}]}`))
	f.Add([]byte(`{"procs":null}`))
	f.Fuzz(func(t *testing.T, in []byte) {
		tab, err := parse(1, in)
		if err != nil {
			return
		}
		for r, p := range tab.Procs {
			if p.Pid <= 0 {
				t.Fatalf("rank %d without a pid in %+v", r, tab)
			}
		}
	})
}
