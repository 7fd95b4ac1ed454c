package gdbmi

import (
	"context"
	"errors"
	"strconv"
	"strings"

	"github.com/sdm-hpc/sdm/mpiq"
)

// A breakpoint on an MPI routine that sdm's interposition library wraps
// (break MPI_Send) has two locations in each program: the wrapper's, and
// the MPI's own, which the wrapper calls (MPI_Send is PMPI_Send there).
// The program's call reaches the wrapper first; at that hit the
// breakpoint's other locations in the same program are disabled, so that
// the call stops once, where the program made it. gdb keeps a disabled
// location disabled when it reads the breakpoints again at a library
// load. A program that calls the MPI's PMPI_ routine itself stops there
// until its first call through the wrapper.

// wrapperHit returns the breakpoint and the address of its hit that a
// *stopped record tells, if the hit is in the interposition library (the
// stop's frame is from there, as read once the library's symbols are) at
// one of several locations of a breakpoint that stays (a temporary one is
// gone with its hit).
func wrapperHit(res Value, from string) (id int, addr uint64, ok bool) {
	if res.S("reason") != "breakpoint-hit" || res.S("disp") == "del" || res.S("locno") == "" || !mpiq.Wrapper(from) {
		return 0, 0, false
	}
	addr, err := strconv.ParseUint(res.Get("frame").S("addr"), 0, 64)
	return res.Int("bkptno"), addr, err == nil
}

// keepToWrapper disables the locations of breakpoint id, which stopped
// the rank in the interposition library at addr, in the rank's program
// but the one at addr: in a shared gdb those of the rank's inferior, in
// gdb's numbers. gdb numbers locations by address and inferior afresh
// whenever any inferior's library load makes it read the breakpoints
// again, which may come between the listing and the disable: so the
// locations are told by inferior and address, and listed again until
// each is as wanted (gdb keeps each location's state across the reads).
func (b *Backend) keepToWrapper(g conn, id int, addr uint64) error {
	run, group := g.Run, ""
	if v, shared := g.(*view); shared {
		run, group = v.h.g.Run, v.group
		v.mu.Lock()
		id = v.numbers[id]
		v.mu.Unlock()
		v.h.wrapped.Lock()
		defer v.h.wrapped.Unlock()
	}
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	var want map[location]bool // as first listed, but for the rank's own
	for range 5 {
		r, _, err := run(ctx, "-break-info "+strconv.Itoa(id))
		if err != nil {
			return err
		}
		locs := locationsOf(r)
		if want == nil {
			want = make(map[location]bool, len(locs))
			for _, l := range locs {
				want[l.at] = l.enabled
			}
		}
		var on, off []string
		for _, l := range locs {
			w, known := want[l.at]
			if group == "" || l.at.group == group {
				w, known = l.at.addr == addr, true
			}
			switch {
			case known && w && !l.enabled:
				on = append(on, l.number)
			case known && !w && l.enabled:
				off = append(off, l.number)
			}
		}
		if len(on)+len(off) == 0 {
			return nil
		}
		for command, numbers := range map[string][]string{"-break-enable ": on, "-break-disable ": off} {
			if len(numbers) > 0 {
				if _, _, err := run(ctx, command+strings.Join(numbers, " ")); err != nil {
					return err
				}
			}
		}
	}
	return errors.New("gdb numbered its locations afresh at each try")
}

// location is a breakpoint's location as it stays when gdb numbers the
// locations afresh: its inferior's thread group and its address.
type location struct {
	group string
	addr  uint64
}

// breakLocation is a location as a listing of breakpoints gives it.
type breakLocation struct {
	number  string // N.M
	at      location
	enabled bool
}

// locationsOf reads the locations of the breakpoint -break-info gave.
func locationsOf(r Record) []breakLocation {
	var out []breakLocation
	for _, point := range r.Results.Get("BreakpointTable").Get("body").Items() {
		for _, loc := range point.Get("locations").Items() {
			addr, err := strconv.ParseUint(loc.S("addr"), 0, 64)
			if err != nil {
				continue
			}
			l := breakLocation{number: loc.S("number"), at: location{addr: addr}, enabled: loc.S("enabled") == "y"}
			if groups := loc.Get("thread-groups").Items(); len(groups) > 0 {
				l.at.group = groups[0].Str
			}
			out = append(out, l)
		}
	}
	return out
}
