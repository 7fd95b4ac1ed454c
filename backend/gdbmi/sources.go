package gdbmi

import (
	"cmp"
	"debug/elf"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sync"
)

// A program's sources, as far as breakpoints and its start need them.
// gdb makes a breakpoint on FILE:LINE pending (-break-insert -f) whenever
// it knows no such file, so that one in a library loaded later is planted
// at its load. But a file the program has not (a typo, a file of another
// program, a program built without -g) then waits for good, silently.
// gdb's CLI asks which is meant; the backend decides: a file that the
// program's sources do not hold may still be pending when it exists on
// disk, as given, or beside the program or one of its sources (a
// library's sources beside the program's own); otherwise it is an error.
// Functions stay pending as before: a library loaded later may define
// them, and gdb knows no library's functions before it loads.

// sourceLine is a FILE:LINE location: the file has an extension, and no
// function name or address is meant. This file's patterns are compiled at
// their first use, not by every server as it starts.
var sourceLine = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^([^:*\s]+\.[A-Za-z0-9+]+):\d+$`) })

// loadedProgram is what the backend knows of the program loaded: its path as
// given and as found, the directory it runs in, and whether it has
// debugging symbols.
type loadedProgram struct {
	name, path, dir string
	symbols         bool
}

// noSource is the error for a breakpoint on a file the program does not
// have, naming what to do.
func (p loadedProgram) noSource(file string) error {
	if !p.symbols {
		return fmt.Errorf("no source file named %s: %s has no debugging symbols (build it with -g)", file, p.name)
	}
	return fmt.Errorf("no source file named %s in %s or its libraries read so far, nor on disk beside its sources: check the name", file, p.name)
}

// mayLoadLater reports whether file, which gdb knows in none of the
// symbols it read, may belong to a library loaded later: it exists on
// disk as given, in the directory the program runs in, beside the
// program, or beside one of its sources.
func mayLoadLater(run func(string) (Record, string, error), p loadedProgram, file string) bool {
	if filepath.IsAbs(file) {
		return exists(file)
	}
	dirs := []string{cmp.Or(p.dir, "."), filepath.Dir(p.path)}
	if r, _, err := run("-file-list-exec-source-files"); err == nil {
		for _, f := range r.Results.Get("files").Items() {
			if full := f.S("fullname"); full != "" {
				dirs = append(dirs, filepath.Dir(full))
			}
		}
	}
	seen := map[string]bool{}
	for _, d := range dirs {
		if d == "" || seen[d] {
			continue
		}
		seen[d] = true
		if exists(filepath.Join(d, file)) {
			return true
		}
	}
	return false
}

func exists(path string) bool {
	info, err := os.Stat(path)
	return err == nil && !info.IsDir()
}

// hasSymbols reports whether the program at path has debugging symbols:
// a .debug_info section in its ELF file, or, failing that (symbols in a
// separate file), source files gdb knows of.
func hasSymbols(run func(string) (Record, string, error), path string) bool {
	if f, err := elf.Open(path); err == nil {
		defer f.Close()
		if f.Section(".debug_info") != nil || f.Section(".zdebug_info") != nil {
			return true
		}
	}
	r, _, err := run("-file-list-exec-source-files")
	return err != nil || len(r.Results.Get("files").Items()) > 0
}

// refused reports whether err is gdb's refusal of a command, as opposed to
// a failure to get an answer.
func refused(err error) bool {
	var r *Refusal
	return errors.As(err, &r)
}
