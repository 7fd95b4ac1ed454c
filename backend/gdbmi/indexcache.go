package gdbmi

import (
	"os"
	"path/filepath"
	"sync"

	"golang.org/x/sys/unix"
)

// indexCache is the setting that has gdb keep the index it builds of each
// library's debug information in the user's cache (gdb's own place for
// it, ~/.cache/gdb), and read it there instead of building it again: in
// the other gdbs of the session and of later sessions, on this host and,
// with a shared home, on the job's other hosts. libc's debug symbols take
// a gdb 0.1 s of CPU to index, paid by every gdb of a host. The index is
// named by the library's build id, so a changed library is indexed anew.
//
// There is no setting when there is no cache directory to write (no home,
// or one this user cannot write): gdb would warn at every library.
var indexCache = sync.OnceValue(func() []string {
	base, err := os.UserCacheDir()
	if err != nil {
		return nil
	}
	dir := filepath.Join(base, "gdb")
	if os.MkdirAll(dir, 0o700) != nil || unix.Access(dir, unix.W_OK) != nil {
		return nil
	}
	return []string{
		"-interpreter-exec console " + Quote("set index-cache directory "+dir),
		"-gdb-set index-cache enabled on",
	}
})
