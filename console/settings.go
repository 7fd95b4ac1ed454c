package console

import (
	"context"
	"strings"

	"github.com/sdm-hpc/sdm/dlopen"
	"github.com/sdm-hpc/sdm/wire"
)

// settings are what set and show know, by name.
var settings = map[string]struct {
	set  func(ctx context.Context, c *Console, ranks wire.RankSet, args string) error
	show func(ctx context.Context, c *Console, ranks wire.RankSet) error
}{
	"dlopen": {setDlopen, showDlopen},
}

func runSet(ctx context.Context, c *Console, ranks wire.RankSet, args string) error {
	name, rest, _ := strings.Cut(args, " ")
	s, ok := settings[name]
	if !ok {
		return usageError("set: unknown setting %q: sdm has dlopen (for gdb's own set, type gdb set ...)", name)
	}
	return s.set(ctx, c, ranks, strings.TrimSpace(rest))
}

func runShow(ctx context.Context, c *Console, ranks wire.RankSet, args string) error {
	s, ok := settings[args]
	if !ok {
		return usageError("show: unknown setting %q: sdm has dlopen (for gdb's own show, type gdb show ...)", args)
	}
	return s.show(ctx, c, ranks)
}

const dlopenHelp = `    slow    every load stops the process and is reported; the front end has the
            new libraries read, which plants the pending breakpoints in them,
            and lets the process go on
    medium  every load stops the process; loads of libraries that match GLOBS
            are reported as in slow mode, the others go on at once and are read
            at the next stop
    fast    loads never stop the process; new libraries are read, and their
            breakpoints planted, at the next stop for another reason
    GLOBS is a colon-separated list of library file names, each of which may
    end in * (libcuda.so*:libmine.so); without GLOBS the list is kept, ""
    empties it. The libraries the program starts with are read in every mode.`

// setDlopen is `set dlopen slow|medium|fast [GLOBS]`. Without GLOBS the
// ranks keep their list; "" empties it. The list is checked here, so that
// a mistake is a usage error before any rank sees it.
func setDlopen(ctx context.Context, c *Console, ranks wire.RankSet, args string) error {
	mode, globs, hasGlobs := strings.Cut(args, " ")
	if _, err := dlopen.ParseMode(mode); err != nil {
		return usageError("set dlopen slow|medium|fast [GLOBS]: %v", err)
	}
	d := wire.Dlopen{Mode: mode}
	if globs = strings.TrimSpace(globs); hasGlobs && globs != "" {
		if globs == `""` || globs == "''" {
			globs = ""
		}
		if _, err := dlopen.ParseMatch(globs); err != nil {
			return usageError("set dlopen: %v", err)
		}
		d.Match, d.SetMatch = globs, true
	}
	_, err := c.send(ctx, ranks, wire.OpDlopen, wire.MustEncode(d))
	return err
}

func showDlopen(ctx context.Context, c *Console, ranks wire.RankSet) error {
	_, err := c.send(ctx, ranks, wire.OpDlopen, nil)
	return err
}

// dlopenText describes a rank's dlopen setting.
func dlopenText(d wire.Dlopen) []string {
	var line string
	switch dlopen.Mode(d.Mode) {
	case dlopen.Slow:
		line = "dlopen slow: every load stops and is reported"
	case dlopen.Medium:
		if d.Match == "" {
			line = "dlopen medium: every load stops, none is reported (empty list)"
		} else {
			line = "dlopen medium: every load stops, loads of " + d.Match + " are reported"
		}
	default:
		line = "dlopen " + d.Mode + ": loads do not stop; breakpoints in new libraries are planted at the next stop"
	}
	if d.Match != "" && d.Mode != string(dlopen.Medium) {
		line += " (list " + d.Match + " kept for medium)"
	}
	lines := []string{line}
	if d.Warning != "" {
		lines = append(lines, "warning: "+d.Warning)
	}
	return lines
}
