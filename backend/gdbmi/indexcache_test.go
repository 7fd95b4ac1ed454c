package gdbmi_test

import (
	"path/filepath"
	"regexp"
	"strconv"
	"testing"

	"github.com/sdm-hpc/sdm/testkit/testenv"
	"github.com/sdm-hpc/sdm/wire"
)

// A gdb reads the index of a program's debug information that an earlier
// gdb built, from gdb's cache in the user's home.
func TestIndexCache(t *testing.T) {
	bin := testenv.Examples(t)
	first := newRank(t, 0, 1, "")
	first.start(filepath.Join(bin, "plain"))
	first.b.Close() // gdb has written what it built once it has ended
	second := newRank(t, 0, 1, "")
	second.start(filepath.Join(bin, "plain"))
	var text wire.Text
	second.must(wire.OpRaw, wire.Text{Text: "show index-cache stats"}, &text)
	m := regexp.MustCompile(`Cache hits \(this session\): (\d+)`).FindStringSubmatch(text.Text)
	if m == nil {
		t.Fatalf("show index-cache stats: %q", text.Text)
	}
	if hits, _ := strconv.Atoi(m[1]); hits == 0 {
		t.Errorf("the second gdb built the program's index again: %q", text.Text)
	}
}
