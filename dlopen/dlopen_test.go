package dlopen

import (
	"strings"
	"testing"

	"github.com/sdm-hpc/sdm/wire"
)

func TestParseMatch(t *testing.T) {
	m, err := ParseMatch(" libcuda.so* : libmine.so")
	if err != nil {
		t.Fatal(err)
	}
	if m.String() != "libcuda.so*:libmine.so" {
		t.Fatalf("canonical form %q", m)
	}
	for lib, want := range map[string]bool{
		"/usr/lib/x86_64-linux-gnu/libcuda.so.1": true,
		"libcuda.so":                             true,
		"/opt/x/libmine.so":                      true,
		"/opt/x/libmine.so.2":                    false, // no *: the whole name
		"/opt/libcuda.so.1/libother.so":          false, // the file name, not the directories
		"libcud.so":                              false,
	} {
		if got := m.Matches(lib); got != want {
			t.Errorf("Matches(%q) = %v, want %v", lib, got, want)
		}
	}
	empty, err := ParseMatch("  ")
	if err != nil || !empty.Empty() || empty.Matches("libc.so.6") {
		t.Fatalf("blank list: %v %v", empty, err)
	}
	all, err := ParseMatch("*")
	if err != nil || !all.Matches("/lib/libanything.so") {
		t.Fatalf("* alone: %v %v", all, err)
	}
}

func TestParseMatchRefuses(t *testing.T) {
	for list, want := range map[string]string{
		"libcuda.so*::libmine.so": "pattern 2: empty",
		"libmine.so:":             "pattern 2: empty",
		"/usr/lib/libcuda.so*":    "is a path",
		"lib*cuda.so":             "* may only end a pattern",
		"**":                      "* may only end a pattern",
		"libcuda.so.?":            `'?' is not supported`,
		"lib[a-z].so":             `'[' is not supported`,
		"lib mine.so":             "space or control character",
		"libx\x00.so":             "space or control character",
	} {
		_, err := ParseMatch(list)
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "dlopen match list") {
			t.Errorf("ParseMatch(%q) = %v, want an error with %q", list, err, want)
		}
	}
}

func TestParseMode(t *testing.T) {
	for s, want := range map[string]Mode{"auto": Auto, "slow": Slow, "medium": Medium, "fast": Fast, " fast ": Fast} {
		if m, err := ParseMode(s); err != nil || m != want {
			t.Errorf("%q: %v %v", s, m, err)
		}
	}
	if _, err := ParseMode("quick"); err == nil || !strings.Contains(err.Error(), "want auto, slow, medium or fast") {
		t.Errorf("quick: %v", err)
	}
}

func TestReports(t *testing.T) {
	m, _ := ParseMatch("libplugin.so")
	lib := "/x/libplugin.so"
	for _, c := range []struct {
		s    Setting
		lib  string
		want bool
	}{
		{Setting{Mode: Slow}, lib, true},
		{Setting{Mode: Medium, Match: m}, lib, true},
		{Setting{Mode: Medium, Match: m}, "/x/libgen-0001.so", false},
		{Setting{Mode: Medium}, lib, false},
		{Setting{Mode: Fast, Match: m}, lib, false},
		{Setting{Mode: Auto}, lib, false},
		{Setting{Mode: Auto, Match: m}, lib, true},
		{Setting{Mode: Auto, Match: m}, "/x/libgen-0001.so", false},
	} {
		if got := c.s.Reports(c.lib); got != c.want {
			t.Errorf("%v reports %s: %v, want %v", c.s, c.lib, got, c.want)
		}
	}
}

// What a load does in each mode, with a breakpoint pending or not: auto
// without a list and without a pending breakpoint is fast.
func TestStopsAndReads(t *testing.T) {
	m, _ := ParseMatch("libplugin.so")
	for _, c := range []struct {
		s                     Setting
		pending               bool
		stops, reads, watches bool
	}{
		{Setting{Mode: Slow}, false, true, false, false},
		{Setting{Mode: Slow}, true, true, false, false},
		{Setting{Mode: Medium, Match: m}, true, true, false, false},
		{Setting{Mode: Fast}, true, false, false, false},
		{Setting{Mode: Auto}, false, false, false, true},
		{Setting{Mode: Auto}, true, true, true, true},
		{Setting{Mode: Auto, Match: m}, false, true, false, true},
		{Setting{Mode: Auto, Match: m}, true, true, true, true},
	} {
		if got := c.s.Stops(c.pending); got != c.stops {
			t.Errorf("%v, pending %v: Stops %v, want %v", c.s, c.pending, got, c.stops)
		}
		if got := c.s.ReadsAtLoad(c.pending); got != c.reads {
			t.Errorf("%v, pending %v: ReadsAtLoad %v, want %v", c.s, c.pending, got, c.reads)
		}
		if got := c.s.WatchesPending(); got != c.watches {
			t.Errorf("%v: WatchesPending %v, want %v", c.s, got, c.watches)
		}
	}
	if Default().Mode != Auto {
		t.Fatalf("default %v, want auto", Default())
	}
}

func env(vars map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := vars[k]; return v, ok }
}

func TestResolve(t *testing.T) {
	str := func(s string) *string { return &s }
	for _, c := range []struct {
		name        string
		env         map[string]string
		mode, match *string
		want        string // Setting.String
		note        string // part of the one note, if any
	}{
		{"default", nil, nil, nil, "auto", ""},
		{"always true", map[string]string{EnvAlways: "true"}, nil, nil, "slow", ""},
		{"always false, no list", map[string]string{EnvAlways: "false"}, nil, nil, "fast", ""},
		{"always false, list", map[string]string{EnvAlways: "false", EnvOnMatch: "libcuda.so*"}, nil, nil, "medium libcuda.so*", ""},
		{"list alone is auto's", map[string]string{EnvOnMatch: "libcuda.so*"}, nil, nil, "auto libcuda.so*", ""},
		{"always true with a list", map[string]string{EnvAlways: "true", EnvOnMatch: "libcuda.so*"}, nil, nil, "slow libcuda.so*", "used only in medium and auto mode"},
		{"flag mode wins", map[string]string{EnvAlways: "false", EnvOnMatch: "libx.so"}, str("fast"), nil, "fast libx.so", "used only in medium and auto mode"},
		{"flag auto wins", map[string]string{EnvAlways: "true"}, str("auto"), nil, "auto", ""},
		{"flag auto with the env's list", map[string]string{EnvAlways: "true", EnvOnMatch: "libx.so"}, str("auto"), nil, "auto libx.so", ""},
		{"flag list with the default mode", nil, nil, str("libcuda.so*"), "auto libcuda.so*", ""},
		{"flag list wins", map[string]string{EnvAlways: "false", EnvOnMatch: "libx.so"}, nil, str("liby.so*"), "medium liby.so*", ""},
		{"flags alone", nil, str("medium"), str("libplugin.so"), "medium libplugin.so", ""},
		{"medium, empty list", nil, str("medium"), nil, "medium", "reports no load"},
		{"flag list empties the env's", map[string]string{EnvAlways: "false", EnvOnMatch: "libx.so"}, nil, str(""), "medium", "reports no load"},
	} {
		s, notes, err := Resolve(env(c.env), c.mode, c.match)
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if s.String() != c.want {
			t.Errorf("%s: %q, want %q", c.name, s, c.want)
		}
		if got := strings.Join(notes, "|"); (c.note == "") != (got == "") || !strings.Contains(got, c.note) {
			t.Errorf("%s: notes %q, want one with %q", c.name, got, c.note)
		}
	}
	for name, c := range map[string]struct {
		env         map[string]string
		mode, match *string
		want        string
	}{
		"bad bool":  {map[string]string{EnvAlways: "sometimes"}, nil, nil, EnvAlways + `="sometimes"`},
		"bad list":  {map[string]string{EnvOnMatch: "a::b"}, nil, nil, EnvOnMatch},
		"bad mode":  {nil, str("turbo"), nil, "--dlopen-mode"},
		"bad match": {nil, nil, str("/lib/libc.so"), "--dlopen-match"},
	} {
		if _, _, err := Resolve(env(c.env), c.mode, c.match); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error naming %s", name, err, c.want)
		}
	}
}

func TestApply(t *testing.T) {
	s, err := Default().Apply(wire.Dlopen{Mode: "medium", Match: "libcuda.so*", SetMatch: true})
	if err != nil || s.String() != "medium libcuda.so*" {
		t.Fatalf("%v %v", s, err)
	}
	// A mode alone keeps the list.
	if s, err = s.Apply(wire.Dlopen{Mode: "fast"}); err != nil || s.String() != "fast libcuda.so*" {
		t.Fatalf("%v %v", s, err)
	}
	// A bad command changes nothing.
	if got, err := s.Apply(wire.Dlopen{Mode: "medium", Match: "a*b", SetMatch: true}); err == nil || got.String() != "fast libcuda.so*" {
		t.Fatalf("%v %v", got, err)
	}
	if back, err := Default().Apply(s.Wire()); err != nil || back.String() != s.String() {
		t.Fatalf("round trip: %v %v", back, err)
	}
}

func TestCUDA(t *testing.T) {
	mine, _ := ParseMatch("libmine.so")
	medium := Setting{Mode: Medium, Match: mine}
	if !medium.LeavesOutCUDA("/usr/lib/libcuda.so.1") {
		t.Fatal("medium without libcuda.so* does not leave out libcuda")
	}
	if w := medium.CUDAWarning("/usr/lib/libcuda.so.1"); !strings.Contains(w, "set dlopen medium libmine.so:libcuda.so*") {
		t.Fatalf("warning %q", w)
	}
	withCUDA, _ := ParseMatch("libcuda.so*:libmine.so")
	for _, s := range []Setting{{Mode: Medium, Match: withCUDA}, {Mode: Slow}, {Mode: Fast}, {Mode: Auto}, {Mode: Auto, Match: withCUDA}} {
		if s.LeavesOutCUDA("/usr/lib/libcuda.so.1") {
			t.Errorf("%v: leaves out libcuda", s)
		}
	}
	auto := Setting{Mode: Auto, Match: mine}
	if !auto.LeavesOutCUDA("/usr/lib/libcuda.so.1") || !strings.Contains(auto.CUDAWarning("/usr/lib/libcuda.so.1"), "set dlopen auto libmine.so:libcuda.so*") {
		t.Fatalf("auto with a list without libcuda.so*: %q", auto.CUDAWarning("/usr/lib/libcuda.so.1"))
	}
	if medium.LeavesOutCUDA("/usr/lib/libcudart.so.12") {
		t.Error("the runtime library is not the driver")
	}
}

// Loads are reported, and need a debugger that sees them, in slow and
// medium mode and in auto mode with a list; not in fast or plain auto.
func TestReportsLoads(t *testing.T) {
	match, err := ParseMatch("libcuda.so*")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		s    Setting
		want bool
	}{
		{Setting{Mode: Slow}, true}, {Setting{Mode: Medium}, true}, {Setting{Mode: Auto, Match: match}, true},
		{Setting{Mode: Auto}, false}, {Setting{Mode: Fast}, false},
	} {
		if c.s.ReportsLoads() != c.want {
			t.Errorf("%v reports loads: %v, want %v", c.s, !c.want, c.want)
		}
	}
}
