package console

import (
	"errors"
	"strings"
	"testing"

	"github.com/sdm-hpc/sdm/wire"
)

// FuzzParse feeds command lines to the parser of "[SET] command args":
// it never panics, every mistake is a usage error, and what it accepts
// is a known command aimed at ranks of the job.
func FuzzParse(f *testing.F) {
	for _, seed := range []string{
		"", "# a comment", "where", "[0-3] where", "[1,3-5] print x[2]", "[workers] next 3",
		"[all] continue", "[0-3", "[] where", "[0-3]", "[9] where", "[0-3,x] where", "[-1] where",
		"[0-3:2] bt", "  [ 0 , 2 ]   print  a b  ", "defset w [0-1]", "nosuch", "[0]\twhere",
		"[" + strings.Repeat("0,", 100) + "0] where",
	} {
		f.Add(seed)
	}
	const size = 8
	f.Fuzz(func(t *testing.T, line string) {
		c := New(ranksOnly(size), &strings.Builder{}, Options{})
		c.sets["workers"] = wire.Range(1, 3)
		cmd, ranks, args, err := c.parse(line)
		if err != nil {
			if !errors.Is(err, ErrUsage) {
				t.Fatalf("parse(%q): %v is not a usage error", line, err)
			}
			return
		}
		if len(line) > MaxLine {
			t.Fatalf("parse took a line of %d bytes", len(line))
		}
		if cmd == nil {
			if s := strings.TrimSpace(line); s != "" && !strings.HasPrefix(s, "#") {
				t.Fatalf("parse(%q): no command", line)
			}
			return
		}
		if _, err := lookup(cmd.name); err != nil {
			t.Fatalf("parse(%q): command %q unknown", line, cmd.name)
		}
		if ranks.Empty() || !ranks.Minus(wire.All(size)).Empty() {
			t.Fatalf("parse(%q): ranks %v, want some of 0-%d", line, ranks, size-1)
		}
		if args != strings.TrimSpace(args) {
			t.Fatalf("parse(%q): arguments %q not trimmed", line, args)
		}
	})
}
