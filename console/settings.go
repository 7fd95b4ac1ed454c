package console

import (
	"context"
	"fmt"
	"strings"

	"github.com/sdm-hpc/sdm/dlopen"
	"github.com/sdm-hpc/sdm/wire"
)

// settings are what set and show know, by name. show gets what follows
// the name, since verbose has parts.
var settings = map[string]struct {
	set  func(ctx context.Context, c *Console, ranks wire.RankSet, args string) error
	show func(ctx context.Context, c *Console, ranks wire.RankSet, args string) error
}{
	"dlopen":  {setDlopen, showDlopen},
	"verbose": {setVerbose, showVerbose},
}

func runSet(ctx context.Context, c *Console, ranks wire.RankSet, args string) error {
	name, rest, _ := strings.Cut(args, " ")
	s, ok := settings[name]
	if !ok {
		return usageError("set: unknown setting %q: sdm has dlopen and verbose (for gdb's own set, type gdb set ...)", name)
	}
	return s.set(ctx, c, ranks, strings.TrimSpace(rest))
}

func runShow(ctx context.Context, c *Console, ranks wire.RankSet, args string) error {
	name, rest, _ := strings.Cut(args, " ")
	s, ok := settings[name]
	if !ok {
		return usageError("show: unknown setting %q: sdm has dlopen and verbose (for gdb's own show, type gdb show ...)", args)
	}
	return s.show(ctx, c, ranks, strings.TrimSpace(rest))
}

const setHelp = `set dlopen MODE [GLOBS]: what a library load does, by mode:
    auto    (the default) a load stops the process only while a breakpoint
            is pending: the rank reads the new library itself, which plants
            the breakpoint if it is there, and goes on, and once none is
            pending loads stop no more; otherwise as fast. With GLOBS, every
            load stops, and loads of libraries that match are reported as
            in medium mode
    slow    every load stops the process and is reported; the front end has the
            new libraries read, which plants the pending breakpoints in them,
            and lets the process go on
    medium  every load stops the process; loads of libraries that match GLOBS
            are reported as in slow mode, the others go on at once and are read
            at the next stop
    fast    loads never stop the process; new libraries are read, and their
            breakpoints planted, at the next stop for another reason
    GLOBS is a colon-separated list of library file names, each of which may
    end in * (libcuda.so*:libmine.so); without GLOBS the list is kept, ""
    empties it. The libraries the program starts with are read in every mode.
set verbose loads on|off: print each reported load ("[0-3] loaded
    /path/libx.so"); off, the default, prints none, since an MPI start
    alone reports tens. --json prints every reported load whatever this
    says, as {"event":"library-loaded","value":{"libraries":[...]}}.`

// setDlopen is `set dlopen auto|slow|medium|fast [GLOBS]`. Without GLOBS
// the ranks keep their list; "" empties it. The list is checked here, so
// that a mistake is a usage error before any rank sees it.
func setDlopen(ctx context.Context, c *Console, ranks wire.RankSet, args string) error {
	mode, globs, hasGlobs := strings.Cut(args, " ")
	if _, err := dlopen.ParseMode(mode); err != nil {
		return usageError("set dlopen auto|slow|medium|fast [GLOBS]: %v", err)
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

func showDlopen(ctx context.Context, c *Console, ranks wire.RankSet, args string) error {
	if args != "" {
		return usageError("show dlopen takes nothing after it")
	}
	_, err := c.send(ctx, ranks, wire.OpDlopen, nil)
	return err
}

// setVerbose is `set verbose loads on|off`: whether the text console
// prints reported loads. It is the console's own, for every rank.
func setVerbose(_ context.Context, c *Console, _ wire.RankSet, args string) error {
	what, value, _ := strings.Cut(args, " ")
	if what != "loads" {
		return usageError("set verbose loads on|off: %s", noVerbose(what))
	}
	var on bool
	switch value = strings.TrimSpace(value); value {
	case "on":
		on = true
	case "off":
	default:
		return usageError("set verbose loads on|off: %q is not on or off", value)
	}
	c.mu.Lock()
	c.verboseLoads = on
	c.mu.Unlock()
	return nil
}

func showVerbose(_ context.Context, c *Console, _ wire.RankSet, args string) error {
	if args != "loads" {
		return usageError("show verbose loads: %s", noVerbose(args))
	}
	value := "off"
	if c.showsLoads() {
		value = "on"
	}
	if c.opts.JSON {
		c.emit(map[string]any{"setting": "verbose loads", "value": value})
		return nil
	}
	c.println("verbose loads: " + value)
	return nil
}

// noVerbose says why what is not a verbose setting.
func noVerbose(what string) string {
	if what == "" {
		return "verbose what? sdm has verbose loads"
	}
	return fmt.Sprintf("there is no verbose %q, only verbose loads", what)
}

// showsLoads says whether the text console prints reported loads.
func (c *Console) showsLoads() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.verboseLoads
}

// dlopenText describes a rank's dlopen setting.
func dlopenText(d wire.Dlopen) []string {
	var line string
	switch dlopen.Mode(d.Mode) {
	case dlopen.Auto:
		line = "dlopen auto: loads stop only while a breakpoint is pending, which the rank plants itself"
		if d.Match != "" {
			line = "dlopen auto: every load stops, loads of " + d.Match + " are reported; the others are read while a breakpoint is pending"
		}
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
	if m := dlopen.Mode(d.Mode); d.Match != "" && m != dlopen.Medium && m != dlopen.Auto {
		line += " (list " + d.Match + " kept for medium and auto)"
	}
	lines := []string{line}
	if d.Warning != "" {
		lines = append(lines, "warning: "+d.Warning)
	}
	return lines
}
