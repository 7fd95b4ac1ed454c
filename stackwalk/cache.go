package stackwalk

import (
	"bufio"
	"debug/dwarf"
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// hostCache keeps, on the host's disk, what reading a module costs most:
// its symbol table sorted and deduplicated, and its compressed DWARF
// sections inflated (libc's debug file: 100 ms of inflating, which every
// rank's server paid before its first stack). The first server of a host
// that needs an entry makes it, under a lock, while the others wait for
// it; every server then maps it, and its pages are the page cache's,
// shared. A rank's server samples its rank itself (it is the rank's
// tracer, package hold), so the host shares what the servers read, not
// the sampling. Entries are by build-id (a module without one is read
// in memory, as before), in the user's cache directory, as gdb's index
// cache and debuginfod's client keep theirs; entries unused for
// cacheAge are removed when a new one is made.
type hostCache struct {
	dir string // "": nothing is kept on disk

	mu      sync.Mutex
	mapped  map[string][]byte // by file, mapped once per sampler
	release []func()
	touched map[string]bool
	started map[string]bool // sections made ahead (ahead), by name@key
	// behind counts the entries being made in the background: close
	// waits for them, so that nothing is mapped after it.
	behind sync.WaitGroup
}

// made counts the entries made by this process, for the tests' sake:
// that a host makes each entry once.
var made atomic.Int64

// cacheAge is how long an entry may go unused before a new entry's making
// removes it.
const cacheAge = 30 * 24 * time.Hour

// lockWait bounds the wait for another server making an entry; after it,
// this one reads the module in memory.
const lockWait = 30 * time.Second

// defaultCacheDir is the user's cache directory's sdm/modules, or "".
func defaultCacheDir() string {
	dir, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	return filepath.Join(dir, "sdm", "modules")
}

func newHostCache(dir string) *hostCache {
	return &hostCache{dir: dir, mapped: map[string][]byte{}, touched: map[string]bool{}, started: map[string]bool{}}
}

// symbols is the symbol table of the module with build-id key, in the
// entry's file name: the cache's, or made by build (and left in the
// cache).
func (c *hostCache) symbols(key, name string, build func() symtab) symtab {
	var made symtab
	b, err := c.entry(key, name, func(w io.Writer) error {
		made = build()
		_, err := w.Write(made.b)
		return err
	}, func(b []byte) bool {
		_, ok := parseSymtab(b)
		return ok
	}, false)
	if t, ok := parseSymtab(b); err == nil && ok {
		return t
	}
	if made.b != nil {
		return made
	}
	return build()
}

// units is the compile units' ranges of the module with build-id key:
// the cache's, or read by build (and left in the cache).
func (c *hostCache) units(key string, build func() ([]cuRange, error)) ([]cuRange, error) {
	var made []cuRange
	var buildErr error
	b, err := c.entry(key, "units", func(w io.Writer) error {
		if made, buildErr = build(); buildErr != nil {
			return buildErr
		}
		_, err := w.Write(encodeUnits(made))
		return err
	}, func(b []byte) bool {
		_, ok := decodeUnits(b)
		return ok
	}, false)
	if cus, ok := decodeUnits(b); err == nil && ok {
		return cus, nil
	}
	if made != nil || buildErr != nil {
		return made, buildErr
	}
	return build()
}

// The units file: "SDMUNIT1" | count u64 | (low, high, unit offset) u64s.
const unitsMagic = "SDMUNIT1"

func encodeUnits(cus []cuRange) []byte {
	b := make([]byte, 16+24*len(cus))
	copy(b, unitsMagic)
	binary.LittleEndian.PutUint64(b[8:], uint64(len(cus)))
	for i, c := range cus {
		at := 16 + 24*i
		binary.LittleEndian.PutUint64(b[at:], c.low)
		binary.LittleEndian.PutUint64(b[at+8:], c.high)
		binary.LittleEndian.PutUint64(b[at+16:], uint64(c.cu))
	}
	return b
}

func decodeUnits(b []byte) ([]cuRange, bool) {
	if len(b) < 16 || string(b[:8]) != unitsMagic {
		return nil, false
	}
	n := binary.LittleEndian.Uint64(b[8:])
	if n == 0 || n > uint64(len(b)-16)/24 || uint64(len(b)) != 16+24*n {
		return nil, false
	}
	cus := make([]cuRange, n)
	for i := range cus {
		at := 16 + 24*i
		cus[i] = cuRange{binary.LittleEndian.Uint64(b[at:]), binary.LittleEndian.Uint64(b[at+8:]), dwarf.Offset(binary.LittleEndian.Uint64(b[at+16:]))}
	}
	return cus, true
}

// section is compressed section s of the module with build-id key,
// inflated: the cache's, or inflated now (and left in the cache).
func (c *hostCache) section(key string, s *elf.Section) ([]byte, error) {
	b, err := c.inflated(key, s, false)
	if err != nil {
		return s.Data()
	}
	return b, nil
}

// inflated is the entry of compressed section s; if only, made only if
// no other server is making it (else errBusy).
func (c *hostCache) inflated(key string, s *elf.Section, only bool) ([]byte, error) {
	name := strings.TrimPrefix(s.Name, ".")
	return c.entry(key, name, func(w io.Writer) error {
		_, err := io.Copy(w, s.Open())
		return err
	}, func(b []byte) bool { return uint64(len(b)) == s.Size }, only)
}

// ahead makes the entries of the compressed sections secs side by side,
// each in the background and only where no server is making it already:
// the sections a module's lines need are inflated by as many of the
// host's servers (and of this one's threads) as there are sections,
// rather than one after another by the first server that needs each. A
// server that needs one waits for it as before.
func (c *hostCache) ahead(key string, secs []*elf.Section) {
	if c == nil || c.dir == "" || !buildIDLike(key) {
		return
	}
	for _, s := range secs {
		if s.Flags&elf.SHF_COMPRESSED == 0 || s.Type == elf.SHT_NOBITS {
			continue
		}
		c.mu.Lock()
		started := c.started[s.Name+"@"+key]
		c.started[s.Name+"@"+key] = true
		c.mu.Unlock()
		if !started {
			c.behind.Go(func() { c.inflated(key, s, true) })
		}
	}
}

// errBusy is an entry another server is making.
var errBusy = errors.New("being made by another server")

// entry maps file name of the entry for key, made by make under the
// file's lock unless it is there already and valid. If only, it is
// made only where no other holds the lock, else errBusy.
func (c *hostCache) entry(key, name string, make func(io.Writer) error, valid func([]byte) bool, only bool) ([]byte, error) {
	if c == nil || c.dir == "" || !buildIDLike(key) {
		return nil, errors.New("no cache")
	}
	dir := filepath.Join(c.dir, key)
	path := filepath.Join(dir, name)
	if b, ok := c.mapValid(path, valid); ok {
		c.touch(dir)
		return b, nil
	}
	if err := c.makeDir(dir); err != nil {
		return nil, err
	}
	// A lock per file: making the units' ranges reads sections that are
	// entries of their own, made under their own locks.
	lock, err := os.OpenFile(path+".lock", os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, err
	}
	defer lock.Close()
	if only {
		if unix.Flock(int(lock.Fd()), unix.LOCK_EX|unix.LOCK_NB) != nil {
			return nil, errBusy
		}
	} else if err := waitLock(lock); err != nil {
		return nil, err
	}
	defer unix.Flock(int(lock.Fd()), unix.LOCK_UN)
	if b, ok := c.mapValid(path, valid); ok {
		return b, nil
	}
	tmp, err := os.CreateTemp(dir, name+".*")
	if err != nil {
		return nil, err
	}
	defer os.Remove(tmp.Name())
	w := bufio.NewWriterSize(tmp, 1<<20)
	err = make(w)
	if err == nil {
		err = w.Flush()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		return nil, fmt.Errorf("cache %s: %w", path, err)
	}
	made.Add(1)
	if b, ok := c.mapValid(path, valid); ok {
		return b, nil
	}
	return nil, fmt.Errorf("cache %s: not valid as written", path)
}

// mapValid maps the file at path (once) if it is there and valid.
func (c *hostCache) mapValid(path string, valid func([]byte) bool) ([]byte, bool) {
	c.mu.Lock()
	b, ok := c.mapped[path]
	c.mu.Unlock()
	if ok {
		return b, true
	}
	b, release, err := mapFile(path)
	if err != nil {
		return nil, false
	}
	if !valid(b) {
		release()
		return nil, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := c.mapped[path]; ok {
		release()
		return old, true
	}
	c.mapped[path] = b
	c.release = append(c.release, release)
	return b, true
}

// makeDir makes an entry's directory, the cache's own first if need be
// (0700: the user's alone), and removes entries unused for cacheAge.
func (c *hostCache) makeDir(dir string) error {
	if err := os.MkdirAll(c.dir, 0o700); err != nil {
		return err
	}
	st, err := os.Stat(c.dir)
	if err != nil {
		return err
	}
	if sys, ok := st.Sys().(*syscall.Stat_t); !ok || int(sys.Uid) != os.Getuid() || st.Mode().Perm()&0o077 != 0 {
		return fmt.Errorf("%s is not this user's alone", c.dir)
	}
	if _, err := os.Stat(dir); err == nil {
		return nil
	}
	if ents, err := os.ReadDir(c.dir); err == nil {
		for _, e := range ents {
			if info, err := e.Info(); err == nil && e.IsDir() && time.Since(info.ModTime()) > cacheAge {
				os.RemoveAll(filepath.Join(c.dir, e.Name()))
			}
		}
	}
	return os.Mkdir(dir, 0o700)
}

// touch marks an entry used, once per sampler.
func (c *hostCache) touch(dir string) {
	c.mu.Lock()
	done := c.touched[dir]
	c.touched[dir] = true
	c.mu.Unlock()
	if !done {
		now := time.Now()
		os.Chtimes(dir, now, now)
	}
}

// close unmaps every file mapped, once the entries being made in the
// background are.
func (c *hostCache) close() {
	c.behind.Wait()
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, r := range c.release {
		r()
	}
	c.release, c.mapped, c.started = nil, map[string][]byte{}, map[string]bool{}
}

// waitLock takes an exclusive lock on f, waiting for at most lockWait
// while another server makes the entry: the wait blocks in flock, so that
// the lock is taken the moment it is let go. A wait that times out is
// left to finish on its own, and lets go of what it then takes.
func waitLock(f *os.File) error {
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err == nil {
		return nil
	}
	fd, err := unix.Dup(int(f.Fd()))
	if err != nil {
		return fmt.Errorf("lock %s: %w", f.Name(), err)
	}
	got := make(chan error, 1)
	var abandoned sync.Mutex
	late := false
	go func() {
		var err error
		for err = unix.Flock(fd, unix.LOCK_EX); err == unix.EINTR; err = unix.Flock(fd, unix.LOCK_EX) {
		}
		abandoned.Lock()
		defer abandoned.Unlock()
		if late {
			unix.Flock(fd, unix.LOCK_UN)
		}
		unix.Close(fd)
		got <- err
	}()
	t := time.NewTimer(lockWait)
	defer t.Stop()
	select {
	case err := <-got:
		if err != nil {
			return fmt.Errorf("lock %s: %w", f.Name(), err)
		}
		return nil
	case <-t.C:
		abandoned.Lock()
		late = true
		abandoned.Unlock()
		return fmt.Errorf("lock %s: still held after %v", f.Name(), lockWait)
	}
}

// buildIDLike says whether key is a build-id's hex, and so a safe name.
func buildIDLike(key string) bool {
	if len(key) < 8 || len(key) > 128 {
		return false
	}
	for _, r := range key {
		if !('0' <= r && r <= '9' || 'a' <= r && r <= 'f') {
			return false
		}
	}
	return true
}
