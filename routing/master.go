package routing

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// MasterPath returns the master file that belongs to a routing file. The
// routing file lists the servers 0..N-1 only (PTP's format); the master
// file holds the one line "N host port" saying where the master, index N,
// listens for its children. Whoever decides the master's address writes
// it: the launcher, or the master itself once it has bound a port.
func MasterPath(routingFile string) string { return routingFile + ".master" }

// writeMaster atomically writes e, the master's entry, into the master file
// of routingFile.
func writeMaster(routingFile string, e Entry) error {
	path := MasterPath(routingFile)
	if msg := checkHost(e.Host); msg != "" {
		return fmt.Errorf("writing master file %s: %s", path, msg)
	}
	if e.Port < 1 || e.Port > 65535 || e.Index < 1 || e.Index > MaxSize {
		return fmt.Errorf("writing master file %s: bad entry %d %s %d", path, e.Index, e.Host, e.Port)
	}
	err := writeAtomic(path, func(w io.Writer) error {
		_, err := fmt.Fprintf(w, "%d %s %d\n", e.Index, e.Host, e.Port)
		return err
	})
	if err != nil {
		return fmt.Errorf("writing master file %s: %w", path, err)
	}
	return nil
}

// ReadMaster reads the master file of routingFile, which must name the
// master of a job of size servers.
func ReadMaster(routingFile string, size int) (Entry, error) {
	path := MasterPath(routingFile)
	data, err := os.ReadFile(path)
	if err != nil {
		return Entry{}, err
	}
	e, err := parseEntryLine(path, data, size+1)
	if err == nil && e.Index != size {
		err = lineError(path, 1, "index %d is not the master of %d servers (%d)", e.Index, size, size)
	}
	return e, err
}

// writeAtomic gives readers either the old file or the complete new one:
// it writes a temporary file in the same directory, syncs it and renames it
// over path, with mode 0644 so that every server of the job can read it.
func writeAtomic(path string, write func(io.Writer) error) (err error) {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	// The leading dot keeps the half-written file out of ls and globs; a
	// name other than base keeps Wait from reacting to it.
	f, err := os.CreateTemp(dir, "."+base+".tmp*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(tmp)
		}
	}()
	if err = write(f); err != nil {
		return err
	}
	if err = f.Chmod(0o644); err != nil {
		return err
	}
	if err = f.Sync(); err != nil {
		return err
	}
	if err = f.Close(); err != nil {
		return err
	}
	if err = os.Rename(tmp, path); err != nil {
		return err
	}
	syncDir(dir)
	return nil
}
