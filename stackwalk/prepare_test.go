package stackwalk

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sdm-hpc/sdm/testkit/testenv"
)

// A prepared program's modules are in the host's cache before its
// process is sampled: the sample makes no entry and names the frames as
// an unprepared sampler does; the host's other samplers leave it be.
func TestPrepareFillsTheHostCache(t *testing.T) {
	bin := build(t, "gcc", "threads.c", "-g", "-O2", "-pthread")
	p := startProgram(t, "ready", bin)
	pid := p.cmd.Process.Pid
	waitBlocked(t, pid)
	want := sampleWith(t, filepath.Join(t.TempDir(), "modules"), pid)

	dir := filepath.Join(t.TempDir(), "modules")
	s := newSampler(dir)
	before := made.Load()
	select {
	case <-s.Prepare(bin, nil):
	case <-time.After(time.Minute):
		t.Fatal("Prepare did not end within a minute")
	}
	if made.Load() == before {
		t.Fatal("Prepare made no entry")
	}
	s.Close()
	// The host's other samplers find it prepared.
	other := newSampler(dir)
	defer other.Close()
	select {
	case <-other.Prepare(bin, nil):
	default:
		t.Fatal("a program prepared on the host is prepared again")
	}
	prepared := made.Load()
	got := sampleWith(t, dir, pid)
	if n := made.Load() - prepared; n != 0 {
		t.Errorf("the first sample after Prepare made %d entries, want none", n)
	}
	if !reflect.DeepEqual(got.Threads, want.Threads) {
		t.Errorf("frames after Prepare:\n%s\nwithout:\n%s", format(got), format(want))
	}

	// A sampler's samples use the modules it prepared, keyed as the
	// process's mappings name them: one module of libc, not two.
	same := newSampler(filepath.Join(t.TempDir(), "modules"))
	defer same.Close()
	<-same.Prepare(bin, nil)
	if _, err := same.Sample(context.Background(), pid); err != nil {
		t.Fatal(err)
	}
	libcs := 0
	for _, m := range same.modules {
		if filepath.Base(m.path) == "libc.so.6" {
			libcs++
		}
	}
	if libcs != 1 {
		t.Errorf("%d modules of libc after Prepare and a sample, want 1", libcs)
	}
}

// Libraries are found as the dynamic loader finds them: the program's
// interpreter, run paths with $ORIGIN, LD_LIBRARY_PATH, the system's
// directories; each once, and one that is nowhere left out.
func TestDependencies(t *testing.T) {
	testenv.RequireTool(t, "gcc")
	dir := t.TempDir()
	lib := filepath.Join(dir, "lib")
	os.Mkdir(lib, 0o755)
	src := filepath.Join(dir, "x.c")
	os.WriteFile(src, []byte("int x(void) { return 1; }\n"), 0o644)
	main := filepath.Join(dir, "main.c")
	os.WriteFile(main, []byte("int x(void);\nint main(void) { return x(); }\n"), 0o644)
	gcc := func(args ...string) {
		if b, err := testenv.Command(t, "gcc", args...).CombinedOutput(); err != nil {
			t.Fatalf("gcc %v: %v\n%s", args, err, b)
		}
	}
	gcc("-shared", "-fPIC", "-o", filepath.Join(lib, "libx.so"), src)
	withOrigin := filepath.Join(dir, "origin")
	gcc("-o", withOrigin, main, "-L"+lib, "-lx", "-Wl,-rpath,$ORIGIN/lib")
	plain := filepath.Join(dir, "plain")
	gcc("-o", plain, main, "-L"+lib, "-lx")

	system := loaderDirs()
	deps := dependencies(withOrigin, nil, system)
	if deps[0] != withOrigin || !slices.Contains(deps, filepath.Join(lib, "libx.so")) {
		t.Errorf("$ORIGIN run path: %v", deps)
	}
	libc := ""
	for _, d := range deps {
		if filepath.Base(d) == "libc.so.6" {
			libc = d
		}
		if strings.Contains(filepath.Base(d), "ld-linux") {
			if _, err := os.Stat(d); err != nil {
				t.Errorf("interpreter %s: %v", d, err)
			}
		}
	}
	if libc == "" {
		t.Errorf("no libc among %v", deps)
	}
	seen := map[string]bool{}
	for _, d := range deps {
		if seen[d] {
			t.Errorf("%s twice in %v", d, deps)
		}
		seen[d] = true
	}
	if deps := dependencies(plain, nil, system); slices.Contains(deps, filepath.Join(lib, "libx.so")) {
		t.Errorf("found without a path to it: %v", deps)
	}
	env := []string{"LD_LIBRARY_PATH=" + lib}
	if deps := dependencies(plain, libraryPath(env), system); !slices.Contains(deps, filepath.Join(lib, "libx.so")) {
		t.Errorf("LD_LIBRARY_PATH: %v", deps)
	}
	if deps := dependencies(filepath.Join(dir, "absent"), nil, system); len(deps) != 1 {
		t.Errorf("a program that is not there: %v", deps)
	}
}

// ld.so.conf: a directory a line, comments, include with a glob
// relative to the file, and no loop through a file that includes itself.
func TestLoaderConf(t *testing.T) {
	dir := t.TempDir()
	os.Mkdir(filepath.Join(dir, "conf.d"), 0o755)
	os.WriteFile(filepath.Join(dir, "ld.so.conf"), []byte("# comment\ninclude conf.d/*.conf\n/opt/a/lib # mine\n\nnot/absolute\ninclude ld.so.conf\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "conf.d", "b.conf"), []byte("/opt/b/lib\n"), 0o644)
	got := confDirs(filepath.Join(dir, "ld.so.conf"), 0)
	if len(got) < 2 || got[0] != "/opt/b/lib" || got[1] != "/opt/a/lib" {
		t.Errorf("dirs %v", got)
	}
	if len(got) > 12 {
		t.Errorf("a file including itself read %d dirs", len(got))
	}
}
