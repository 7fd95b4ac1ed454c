package stackwalk

import (
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// Prepare reads, in the background, what the first samples of a process
// of program will read of its modules: the program's, its interpreter's
// and its libraries' headers, symbols and compile units, and their
// compressed DWARF inflated into the host's cache. A host's first
// stacks otherwise wait for libc's debug file to be inflated (about
// 50 ms of one core, several times that on a host whose cores the
// ranks keep busy); prepared while the job starts, the cost is paid
// when nobody waits for it. The libraries are found as the dynamic
// loader finds them (the program's run paths, LD_LIBRARY_PATH of env,
// ld.so.conf's directories, the system's); one it does not find is read
// when a sample first meets it, as without Prepare. A program is
// prepared once per host a day (a host's servers each have a sampler,
// and each would spend a millisecond finding it all made already); done
// is closed when it is, at once where another sampler prepared it or is
// preparing it, or the host has no cache.
func (s *Sampler) Prepare(program string, env []string) (done <-chan struct{}) {
	s.mu.Lock()
	if s.prepared == nil {
		s.prepared = map[string]bool{}
	}
	again := s.prepared[program]
	s.prepared[program] = true
	s.mu.Unlock()
	ch := make(chan struct{})
	claimed, ok := (func())(nil), false
	if !again {
		claimed, ok = s.cache.claim(program)
	}
	if !ok {
		close(ch)
		return ch
	}
	s.cache.behind.Go(func() {
		defer close(ch)
		defer claimed()
		for _, path := range dependencies(program, libraryPath(env), loaderDirs()) {
			if m := s.fileModule(path); m != nil && m.header() {
				m.symbols()
				if x := m.lineIndex(); x != nil {
					x.init()
				}
			}
		}
	})
	return ch
}

// preparedAge is how long a program's preparing holds for its host:
// after it, the next sampler prepares it again (its libraries may have
// changed meanwhile; one that is made already costs a map).
const preparedAge = 24 * time.Hour

// claim reports whether this sampler is the host's to prepare program
// now: no marker of it younger than preparedAge, and no other sampler
// preparing it (a lock taken without waiting). done marks it prepared
// and lets the lock go. The marker is named by the program's path and
// identity (device, inode, size, change time): a program built again is
// prepared again.
func (c *hostCache) claim(program string) (done func(), ok bool) {
	var st unix.Stat_t
	if c == nil || c.dir == "" || unix.Stat(program, &st) != nil {
		return nil, false
	}
	dir := filepath.Join(c.dir, "prepared")
	if c.makeDir(dir) != nil {
		return nil, false
	}
	sum := sha256.Sum256(fmt.Appendf(nil, "%s\x00%d:%d:%d:%d.%d", program, st.Dev, st.Ino, st.Size, st.Ctim.Sec, st.Ctim.Nsec))
	marker := filepath.Join(dir, hex.EncodeToString(sum[:12]))
	if info, err := os.Stat(marker); err == nil && time.Since(info.ModTime()) < preparedAge {
		return nil, false
	}
	lock, err := os.OpenFile(marker+".lock", os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, false
	}
	if unix.Flock(int(lock.Fd()), unix.LOCK_EX|unix.LOCK_NB) != nil {
		lock.Close()
		return nil, false
	}
	return func() {
		if f, err := os.Create(marker); err == nil {
			f.Close()
		}
		lock.Close() // lets the lock go
	}, true
}

// fileModule is the module of the file at path, keyed as a mapping of
// it is (device and inode), or nil.
func (s *Sampler) fileModule(path string) *module {
	var st unix.Stat_t
	if unix.Stat(path, &st) != nil {
		return nil
	}
	dev := fmt.Sprintf("%02x:%02x", unix.Major(st.Dev), unix.Minor(st.Dev))
	return s.cached(fileKey(dev, st.Ino), path, func() ([]byte, func(), error) { return mapFile(path) })
}

// maxDependencies bounds the libraries Prepare follows.
const maxDependencies = 512

// dependencies is program, its interpreter and the libraries it needs,
// directly or not, breadth first, each once; those not found are left
// out.
func dependencies(program string, envPath, system []string) []string {
	out := []string{program}
	seen := map[string]bool{program: true}
	for i := 0; i < len(out) && len(out) < maxDependencies; i++ {
		f, err := elf.Open(out[i])
		if err != nil {
			continue
		}
		var found []string
		if i == 0 {
			if interp := interpreter(f); interp != "" {
				found = append(found, interp)
			}
		}
		needed, _ := f.DynString(elf.DT_NEEDED)
		rpath, _ := f.DynString(elf.DT_RPATH)
		runpath, _ := f.DynString(elf.DT_RUNPATH)
		f.Close()
		origin := filepath.Dir(out[i])
		var dirs []string
		if len(runpath) == 0 {
			dirs = append(dirs, searchPath(rpath, origin)...)
		}
		dirs = append(dirs, envPath...)
		dirs = append(dirs, searchPath(runpath, origin)...)
		dirs = append(dirs, system...)
		for _, name := range needed {
			if p := findLibrary(name, dirs); p != "" {
				found = append(found, p)
			}
		}
		for _, p := range found {
			if !seen[p] {
				seen[p] = true
				out = append(out, p)
			}
		}
	}
	return out
}

// interpreter is the program's dynamic loader (PT_INTERP), or "".
func interpreter(f *elf.File) string {
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			b := make([]byte, p.Filesz)
			if _, err := p.ReadAt(b, 0); err == nil {
				return strings.TrimRight(string(b), "\x00")
			}
		}
	}
	return ""
}

// searchPath splits DT_RPATH or DT_RUNPATH strings into directories,
// $ORIGIN replaced by the object's own.
func searchPath(values []string, origin string) []string {
	var dirs []string
	for _, v := range values {
		for _, d := range strings.Split(v, ":") {
			d = strings.ReplaceAll(strings.ReplaceAll(d, "${ORIGIN}", origin), "$ORIGIN", origin)
			if d != "" {
				dirs = append(dirs, d)
			}
		}
	}
	return dirs
}

// findLibrary is the first regular file of that name in dirs, or name
// itself when it has a slash.
func findLibrary(name string, dirs []string) string {
	if strings.Contains(name, "/") {
		return name
	}
	for _, d := range dirs {
		p := filepath.Join(d, name)
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() {
			return p
		}
	}
	return ""
}

// libraryPath is LD_LIBRARY_PATH's directories in env, else in this
// process's environment.
func libraryPath(env []string) []string {
	value, ok := os.LookupEnv("LD_LIBRARY_PATH")
	for _, kv := range env {
		if v, found := strings.CutPrefix(kv, "LD_LIBRARY_PATH="); found {
			value, ok = v, true
		}
	}
	if !ok {
		return nil
	}
	return strings.FieldsFunc(value, func(r rune) bool { return r == ':' || r == ';' })
}

// loaderDirs are the directories of /etc/ld.so.conf (and the files it
// includes), then the system's own.
func loaderDirs() []string {
	dirs := confDirs("/etc/ld.so.conf", 0)
	return append(dirs, "/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib64", "/usr/lib64", "/lib", "/usr/lib")
}

// confDirs reads an ld.so.conf file: a directory a line, include GLOB.
func confDirs(path string, depth int) []string {
	b, err := os.ReadFile(path)
	if err != nil || depth > 4 {
		return nil
	}
	var dirs []string
	for line := range strings.Lines(string(b)) {
		line, _, _ = strings.Cut(line, "#")
		line = strings.TrimSpace(line)
		if glob, ok := strings.CutPrefix(line, "include"); ok && strings.TrimSpace(glob) != "" && (glob[0] == ' ' || glob[0] == '\t') {
			glob = strings.TrimSpace(glob)
			if !filepath.IsAbs(glob) {
				glob = filepath.Join(filepath.Dir(path), glob)
			}
			files, _ := filepath.Glob(glob)
			for _, f := range files {
				dirs = append(dirs, confDirs(f, depth+1)...)
			}
			continue
		}
		if strings.HasPrefix(line, "/") {
			dirs = append(dirs, line)
		}
	}
	return dirs
}
