package connect

import (
	"bytes"
	"encoding/json"
	"log"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestListPrintsEachRequestAndWhatItSkipped(t *testing.T) {
	dir := newDir(t)
	r := plain(t)
	if err := r.Write(dir); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "0badf00d.request"), []byte("{"), 0o600)
	var out, errs bytes.Buffer
	if err := List(&out, log.New(&errs, "sdm: ", 0), dir, false); err != nil {
		t.Fatal(err)
	}
	if out.String() != r.String()+"\n" {
		t.Errorf("listed %q, want %q", out.String(), r.String()+"\n")
	}
	if !strings.HasPrefix(errs.String(), "sdm: skipped: ") || !strings.Contains(errs.String(), "0badf00d.request") {
		t.Errorf("log %q, want the garbled file skipped", errs.String())
	}
	out.Reset()
	if err := List(&out, log.New(&errs, "", 0), dir, true); err != nil {
		t.Fatal(err)
	}
	var got Request
	if err := json.Unmarshal(out.Bytes(), &got); err != nil || got.ID != r.ID {
		t.Errorf("JSON %q: %v, want request %s", out.String(), err, r.ID)
	}
}

func TestListSaysWhenThereIsNone(t *testing.T) {
	dir := newDir(t)
	var out, errs bytes.Buffer
	if err := List(&out, log.New(&errs, "sdm: ", 0), dir, false); err != nil {
		t.Fatal(err)
	}
	if out.Len() != 0 || errs.String() != "sdm: no requests in "+dir+"\n" {
		t.Errorf("out %q, log %q; want nothing listed and no requests in %s", out.String(), errs.String(), dir)
	}
	errs.Reset()
	List(&out, log.New(&errs, "", 0), dir, true)
	if out.Len() != 0 || errs.Len() != 0 {
		t.Errorf("JSON listing of none: out %q, log %q; want nothing", out.String(), errs.String())
	}
}
