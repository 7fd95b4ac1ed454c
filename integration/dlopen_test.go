package integration

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sdm-hpc/sdm/launcher"
	"github.com/sdm-hpc/sdm/testkit/testenv"
	"github.com/sdm-hpc/sdm/wire"
)

// runEnv is run with variables added to the environment.
func runEnv(t *testing.T, env []string, args ...string) (string, string, int) {
	t.Helper()
	return runWith(t, append(cleanEnv(), env...), "", args...)
}

// Each mode through the whole chain, the front end's flags and
// environment, the tree, four gdbs and the console: a breakpoint on a
// function of a library loaded at run time.
func TestDlopenModesEndToEnd(t *testing.T) {
	testenv.RequireTool(t, "gdb")
	bin := testenv.Examples(t)
	all := wire.All(4)
	prog := []string{"--", filepath.Join(bin, "dlopen"), "2"}
	lib := func(name string) string { return "loaded " + filepath.Join(bin, name) }
	for _, c := range []struct {
		name     string
		env      []string
		args     []string
		loaded   []string // libraries whose loads reach the console
		unloaded []string // and those whose loads must not (all print, if reported: set verbose loads on)
		stops    []string // what every rank must have printed
	}{
		{name: "auto by default: no load is reported",
			args:     []string{"-e", "set verbose loads on", "-e", "break plugin_function", "-e", "run", "-e", "wait"},
			unloaded: []string{lib("dlopen-libs/libgen-0000.so"), lib("libplugin.so")},
			stops:    []string{"stopped in plugin_function at examples/dlopen/plugin.c:7 (breakpoint 1)"}},
		{name: "auto with the list from the environment",
			env:      []string{"SDM_DLOPEN_RECALCULATE_ON_MATCH=libplugin.so"},
			args:     []string{"-e", "set verbose loads on", "-e", "show dlopen", "-e", "break plugin_function", "-e", "run", "-e", "wait"},
			loaded:   []string{lib("libplugin.so")},
			unloaded: []string{lib("dlopen-libs/libgen-0000.so")},
			stops:    []string{"dlopen auto: every load stops, loads of libplugin.so are reported", "stopped in plugin_function at examples/dlopen/plugin.c:7 (breakpoint 1)"}},
		{name: "slow from the environment",
			env:    []string{"SDM_DLOPEN_ALWAYS_RECALCULATE=true"},
			args:   []string{"-e", "set verbose loads on", "-e", "break plugin_function", "-e", "run", "-e", "wait"},
			loaded: []string{lib("dlopen-libs/libgen-0000.so"), lib("dlopen-libs/libgen-0001.so"), lib("libplugin.so")},
			stops:  []string{"stopped in plugin_function at examples/dlopen/plugin.c:7 (breakpoint 1)"}},
		{name: "medium from the environment",
			env:      []string{"SDM_DLOPEN_ALWAYS_RECALCULATE=false", "SDM_DLOPEN_RECALCULATE_ON_MATCH=libcuda.so*:libplugin.so"},
			args:     []string{"-e", "set verbose loads on", "-e", "break plugin_function", "-e", "run", "-e", "wait"},
			loaded:   []string{lib("libplugin.so")},
			unloaded: []string{lib("dlopen-libs/libgen-0000.so")},
			stops:    []string{"stopped in plugin_function at examples/dlopen/plugin.c:7 (breakpoint 1)"}},
		{name: "medium, no match: the flag wins over the environment",
			env:      []string{"SDM_DLOPEN_ALWAYS_RECALCULATE=true"},
			args:     []string{"--dlopen-mode", "medium", "--dlopen-match", "libcuda.so*", "-e", "break plugin_function", "-e", "break loaded", "-e", "run", "-e", "wait", "-e", "continue", "-e", "wait"},
			unloaded: []string{lib("libplugin.so")},
			stops:    []string{"stopped in loaded at examples/dlopen/dlopen.c:", "stopped in plugin_function at examples/dlopen/plugin.c:7 (breakpoint 1)"}},
		{name: "fast",
			env:      []string{"SDM_DLOPEN_ALWAYS_RECALCULATE=false"},
			args:     []string{"-e", "break plugin_function", "-e", "break loaded", "-e", "run", "-e", "wait", "-e", "breakpoints", "-e", "continue", "-e", "wait"},
			unloaded: []string{lib("libplugin.so")},
			stops:    []string{"stopped in loaded at examples/dlopen/dlopen.c:", "breakpoint 1 at examples/dlopen/plugin.c:7 in plugin_function", "stopped in plugin_function at examples/dlopen/plugin.c:7 (breakpoint 1)"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			args := append(append([]string{"debug", "-n", "4", "--timeout", "60s"}, c.args...), prog...)
			out, stderr, code := runEnv(t, c.env, args...)
			if code != 0 {
				t.Fatalf("exit %d\n%s\n%s", code, out, stderr)
			}
			for _, want := range c.loaded {
				if got := ranksOf(out, want); !got.Equal(all) {
					t.Errorf("%q for ranks %v, want all", want, got)
				}
			}
			for _, not := range c.unloaded {
				if strings.Contains(out, not) {
					t.Errorf("output has %q", not)
				}
			}
			for _, want := range c.stops {
				if got := ranksWith(out, want); !got.Equal(all) {
					t.Errorf("%q for ranks %v, want all", want, got)
				}
			}
			if t.Failed() {
				t.Logf("output:\n%s\nstderr:\n%s", out, stderr)
			}
		})
	}
}

// ranksWith is the union of the rank sets of the lines of out that hold
// what.
func ranksWith(out, what string) wire.RankSet {
	var all wire.RankSet
	for _, line := range strings.Split(out, "\n") {
		if i := strings.IndexByte(line, ']'); i > 0 && line[0] == '[' && strings.Contains(line, what) {
			if r, err := wire.ParseRankSet(line[1:i]); err == nil {
				all = all.Union(r)
			}
		}
	}
	return all
}

// set dlopen changes the setting of some ranks in a running session;
// show dlopen shows it; a bad list is a mistake in the command, and the
// ranks keep what they had. set verbose loads is the console's own.
func TestDlopenConsoleCommands(t *testing.T) {
	out, stderr, code := runEnv(t, nil, "debug", "-n", "4", "--backend", "sim",
		"-e", "show dlopen", "-e", "[2-3] set dlopen medium libcuda.so*:libmine.so", "-e", "[0] set dlopen fast",
		"-e", "set dlopen medium lib*mine.so", "-e", "set dlopen sideways", "-e", "[1] set dlopen auto libx.so*", "-e", "show dlopen",
		"-e", "set verbose loads maybe", "-e", "show verbose loads", "-e", "set verbose loads on", "-e", "show verbose loads",
		"-e", "[0] set dlopen auto \"\"", "-e", "[0] show dlopen", "--", "ring")
	if code != 2 {
		t.Fatalf("exit %d, want 2 for the commands typed wrong\n%s\n%s", code, out, stderr)
	}
	for _, want := range []string{
		"[0-3] dlopen auto: loads stop only while a breakpoint is pending, which the rank plants itself\n",
		"[2-3] dlopen medium: every load stops, loads of libcuda.so*:libmine.so are reported\n",
		"[0] dlopen fast: loads do not stop; breakpoints in new libraries are planted at the next stop\n",
		"[1] dlopen auto: every load stops, loads of libx.so* are reported; the others are read while a breakpoint is pending\n",
		"verbose loads: off\nverbose loads: on\n",
		"[0] dlopen auto: loads stop only while a breakpoint is pending, which the rank plants itself\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	for _, want := range []string{
		`-e:4: set dlopen: dlopen match list "lib*mine.so": pattern 1: "lib*mine.so": * may only end a pattern`,
		`-e:5: set dlopen auto|slow|medium|fast [GLOBS]: dlopen mode "sideways": want auto, slow, medium or fast`,
		`-e:8: set verbose loads on|off: "maybe" is not on or off`,
	} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q", want)
		}
	}
	if t.Failed() {
		t.Logf("output:\n%s\nstderr:\n%s", out, stderr)
	}
}

// Reported loads print only after set verbose loads on; --json prints
// them whatever the setting.
func TestDlopenVerboseLoads(t *testing.T) {
	testenv.RequireTool(t, "gdb")
	bin := testenv.Examples(t)
	all := wire.All(2)
	plugin := "loaded " + filepath.Join(bin, "libplugin.so")
	for _, c := range []struct {
		name  string
		args  []string
		shows bool
	}{
		{"off by default", nil, false},
		{"on", []string{"-e", "set verbose loads on"}, true},
		{"on, then off", []string{"-e", "set verbose loads on", "-e", "set verbose loads off"}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			args := append([]string{"debug", "-n", "2", "--timeout", "60s", "--dlopen-mode", "slow"}, c.args...)
			args = append(args, "-e", "run", "-e", "wait", "--", filepath.Join(bin, "dlopen"), "1")
			out, stderr, code := runEnv(t, nil, args...)
			if code != 0 {
				t.Fatalf("exit %d\n%s\n%s", code, out, stderr)
			}
			if got := ranksWith(out, "exited with code 0"); !got.Equal(all) {
				t.Errorf("exits for ranks %v, want all", got)
			}
			if got := ranksOf(out, plugin); c.shows != got.Equal(all) || !c.shows && strings.Contains(out, "loaded ") {
				t.Errorf("%q for ranks %v, want it printed: %v", plugin, got, c.shows)
			}
			if t.Failed() {
				t.Logf("output:\n%s\nstderr:\n%s", out, stderr)
			}
		})
	}
	out, stderr, code := runEnv(t, nil, "debug", "-n", "2", "--json", "--timeout", "60s", "--dlopen-mode", "slow",
		"-e", "run", "-e", "wait", "--", filepath.Join(bin, "dlopen"), "1")
	want := `"event":"library-loaded","ranks":"%s","type":"event","value":{"libraries":["` + filepath.Join(bin, "libplugin.so") + `"]}`
	if code != 0 || !strings.Contains(out, fmt.Sprintf(want, "0-1")) && !strings.Contains(out, fmt.Sprintf(want, "0")) {
		t.Fatalf("--json: exit %d, want %s in\n%s\n%s", code, want, out, stderr)
	}
}

// Bad settings on the command line or in the environment end sdm before
// any job starts, with the reason.
func TestDlopenBadSettings(t *testing.T) {
	for _, c := range []struct {
		env  []string
		args []string
		want string
	}{
		{nil, []string{"--dlopen-match", "libcuda.so*::libmine.so"}, `--dlopen-match: dlopen match list "libcuda.so*::libmine.so": pattern 2: empty`},
		{nil, []string{"--dlopen-match", "/usr/lib/libcuda.so*"}, "is a path: patterns match a library's file name"},
		{nil, []string{"--dlopen-mode", "turbo"}, `--dlopen-mode: dlopen mode "turbo": want auto, slow, medium or fast`},
		{[]string{"SDM_DLOPEN_ALWAYS_RECALCULATE=maybe"}, nil, `SDM_DLOPEN_ALWAYS_RECALCULATE="maybe": want true`},
		{[]string{"SDM_DLOPEN_RECALCULATE_ON_MATCH=lib?.so"}, nil, "SDM_DLOPEN_RECALCULATE_ON_MATCH: dlopen match list"},
	} {
		args := append(append([]string{"debug", "-n", "2", "--backend", "sim"}, c.args...), "--", "ring")
		out, stderr, code := runEnv(t, c.env, args...)
		if code != 2 || !strings.Contains(stderr, c.want) || strings.Contains(stderr, "connected") {
			t.Errorf("%v %v: exit %d, %q %q; want exit 2 and %q", c.env, c.args, code, out, stderr, c.want)
		}
	}
	if _, stderr, code := runEnv(t, nil, "attach", "--pid", "1", "--dlopen-mode", "sometimes"); code != 2 || !strings.Contains(stderr, "--dlopen-mode") {
		t.Errorf("attach with a bad mode: exit %d, %q", code, stderr)
	}
}

// The front end answers each reported load once per merged group: slow
// mode costs round trips, fast and auto mode none (auto plants the pending
// breakpoint at the rank), and the ranks reach the breakpoint either way.
func TestDlopenRoundTrips(t *testing.T) {
	testenv.RequireTool(t, "gdb")
	bin := testenv.Examples(t)
	const n = 4
	all := wire.All(n)
	for _, mode := range []string{"slow", "fast", "auto"} {
		t.Run(mode, func(t *testing.T) {
			s := gdbSession(t, n)
			command(t, s.Command, all, wire.OpDlopen, wire.MustEncode(wire.Dlopen{Mode: mode}))
			body := wire.MustEncode(wire.Start{Program: filepath.Join(bin, "dlopen"), Args: []string{"3"}})
			if g := command(t, s.Command, all, wire.OpStart, body); !okRanks(g).Equal(all) {
				t.Fatalf("start: %s", describe(g))
			}
			command(t, s.Command, all, wire.OpBreak, wire.MustEncode(wire.Break{Location: "plugin_function"}))
			command(t, s.Command, all, wire.OpBreak, wire.MustEncode(wire.Break{Location: "loaded"}))
			command(t, s.Command, all, wire.OpRun, nil)
			stoppedAll(t, s.Session, all)
			command(t, s.Command, all, wire.OpCont, nil)
			for _, st := range stoppedAll(t, s.Session, all) {
				if st.Frame.Func != "plugin_function" {
					t.Fatalf("stop: %+v", st)
				}
			}
			// Four loads a rank: three generated libraries and the plugin.
			trips := s.LoadRoundTrips()
			switch {
			case mode != "slow" && trips != 0:
				t.Fatalf("%s mode: %d round trips", mode, trips)
			case mode == "slow" && (trips < 4 || trips > 4*n):
				t.Fatalf("slow mode: %d round trips for 4 loads on %d ranks", trips, n)
			}
			t.Logf("%s: %d round trips", mode, trips)
		})
	}
}

// gdbSession launches n ranks with gdb on this machine and ends them with
// the test.
func gdbSession(t testing.TB, n int) *launcher.Session {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	s, err := launcher.Launch(ctx, launcher.Options{Size: n, Debugger: "gdb-mi", SDM: sdmBin})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.End(10 * time.Second) })
	return s
}

// sdm attach takes the dlopen flags too, for the loads after the attach.
func TestDlopenAttach(t *testing.T) {
	bin := testenv.Examples(t)
	testenv.RequireTool(t, "gdb")
	job, starter := detached(t, nil, filepath.Join(bin, "mpir-starter"), "-n", "2", "--hang")
	job.lines(t, 1, "started 2 ranks")
	out, stderr, code := runEnv(t, nil, "attach", "--pid", strconv.Itoa(starter), "--dlopen-mode", "medium", "--dlopen-match", "libcuda.so*",
		"-e", "show dlopen", "-e", "halt", "-e", "wait", "-e", "where")
	if code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out, stderr)
	}
	// pause is __libc_pause where libc's debug information is installed.
	for _, want := range []string{"[0-1] dlopen medium: every load stops, loads of libcuda.so* are reported\n", "pause"} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in:\n%s", want, out)
		}
	}
	free(t, children(starter)...)
}
