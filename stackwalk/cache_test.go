package stackwalk

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
)

// sampleWith samples pid with a new sampler whose host cache is dir.
func sampleWith(t *testing.T, dir string, pid int) Snapshot {
	t.Helper()
	s := newSampler(dir)
	defer s.Close()
	snap, err := s.Sample(context.Background(), pid)
	if err != nil {
		t.Fatal(err)
	}
	return snap
}

// libcLines says whether a frame of libc is named with a file and line
// (libc's debug file, whose DWARF is compressed, is installed).
func libcLines(snap Snapshot) bool {
	for _, th := range snap.Threads {
		for _, f := range th.Frames {
			if strings.Contains(f.Module, "libc.so") && f.File != "" {
				return true
			}
		}
	}
	return false
}

// Samplers of one host share what they read of modules: the first makes
// the entries (symbols, units, inflated sections), a second makes none and
// names every frame as the first did; samplers that start together make
// each entry once between them.
func TestHostCacheShared(t *testing.T) {
	bin := build(t, "gcc", "threads.c", "-g", "-O2", "-pthread")
	p := startProgram(t, "ready", bin)
	pid := p.cmd.Process.Pid
	waitBlocked(t, pid)
	dir := filepath.Join(t.TempDir(), "modules")
	before := made.Load()
	first := sampleWith(t, dir, pid)
	if made.Load() == before {
		t.Fatal("the first sampler made no entry")
	}
	if _, err := os.Stat(dir); err != nil {
		t.Fatal(err)
	}
	again := made.Load()
	second := sampleWith(t, dir, pid)
	if made.Load() != again {
		t.Errorf("a second sampler made %d entries, want none", made.Load()-again)
	}
	if !reflect.DeepEqual(first.Threads, second.Threads) {
		t.Errorf("the cache's names differ:\n%s\nfirst:\n%s", format(second), format(first))
	}
	if _, err := os.Stat("/usr/lib/debug/.build-id"); err == nil && !libcLines(second) {
		t.Errorf("no libc frame with a line from its debug file:\n%s", format(second))
	}

	// A process has one tracer: eight processes of the program.
	var pids []int
	for range 8 {
		p := startProgram(t, "ready", bin)
		waitBlocked(t, p.cmd.Process.Pid)
		pids = append(pids, p.cmd.Process.Pid)
	}
	together := filepath.Join(t.TempDir(), "modules")
	before = made.Load()
	var wg sync.WaitGroup
	for _, pid := range pids {
		wg.Go(func() { sampleWith(t, together, pid) })
	}
	wg.Wait()
	var files int
	filepath.Walk(together, func(path string, info os.FileInfo, err error) error {
		if err == nil && !info.IsDir() && !strings.HasSuffix(path, ".lock") {
			files++
		}
		return nil
	})
	if got := made.Load() - before; got != int64(files) {
		t.Errorf("8 samplers at once made %d entries for %d files, want each once", got, files)
	}
}

// A damaged entry is made again, a cache that is not the user's alone is
// not used, and either way frames are named.
func TestHostCacheDamagedOrOpen(t *testing.T) {
	bin := build(t, "gcc", "threads.c", "-g", "-O0", "-pthread")
	p := startProgram(t, "ready", bin)
	pid := p.cmd.Process.Pid
	waitBlocked(t, pid)
	dir := filepath.Join(t.TempDir(), "modules")
	want := sampleWith(t, dir, pid)
	var damaged int
	filepath.Walk(dir, func(path string, info os.FileInfo, err error) error {
		if err == nil && !info.IsDir() && !strings.HasSuffix(path, ".lock") {
			os.WriteFile(path, []byte("damaged"), 0o600)
			damaged++
		}
		return nil
	})
	before := made.Load()
	if got := sampleWith(t, dir, pid); !reflect.DeepEqual(got.Threads, want.Threads) {
		t.Errorf("with damaged entries:\n%s\nwant:\n%s", format(got), format(want))
	}
	if made.Load() == before || damaged == 0 {
		t.Errorf("%d damaged entries, %d made again", damaged, made.Load()-before)
	}

	open := filepath.Join(t.TempDir(), "open")
	if err := os.Mkdir(open, 0o777); err != nil {
		t.Fatal(err)
	}
	os.Chmod(open, 0o777)
	if got := sampleWith(t, open, pid); !reflect.DeepEqual(got.Threads, want.Threads) {
		t.Errorf("with a cache open to others:\n%s\nwant:\n%s", format(got), format(want))
	}
	if ents, _ := os.ReadDir(open); len(ents) != 0 {
		t.Errorf("a cache directory open to others was written to: %v", ents)
	}
}

// The FDEs found through .eh_frame_hdr are those of the whole section,
// at every function's entry and middle, for a program and libc.
func TestEHIndexAgreesWithTheSection(t *testing.T) {
	for _, path := range []string{build(t, "gcc", "threads.c", "-g", "-O2", "-pthread"), "/usr/lib/x86_64-linux-gnu/libc.so.6"} {
		data, release, err := mapFile(path)
		if err != nil {
			t.Fatal(err)
		}
		defer release()
		m := &module{path: path, open: func() ([]byte, func(), error) { return data, nil, nil }}
		if !m.header() {
			t.Fatal(m.err)
		}
		eh, hdr := m.file.Section(".eh_frame"), m.file.Section(".eh_frame_hdr")
		if eh == nil || hdr == nil {
			t.Fatalf("%s: no .eh_frame_hdr", path)
		}
		index := newEHIndex(sectionBytes(data, hdr), hdr.Addr, sectionBytes(data, eh), eh.Addr)
		if index == nil {
			t.Fatalf("%s: .eh_frame_hdr not read", path)
		}
		fdes, err := parseCFI(sectionBytes(data, eh), eh.Addr, true)
		if err != nil {
			t.Fatal(err)
		}
		table := newCFITable(fdes)
		for _, f := range table.fdes {
			for _, pc := range []uint64{f.begin, (f.begin + f.end) / 2, f.end - 1} {
				got, want := index.find(pc), table.find(pc)
				if (got == nil) != (want == nil) || got != nil && (got.begin != want.begin || got.end != want.end || string(got.insns) != string(want.insns)) {
					t.Fatalf("%s: pc %#x: index %+v, section %+v", path, pc, got, want)
				}
			}
		}
		if len(table.fdes) < 5 {
			t.Errorf("%s: %d FDEs", path, len(table.fdes))
		}
	}
}
