// Package connect is reverse connect: a job in a batch script asks to be
// debugged (sdm connect) by writing a request into a directory the user's
// front end watches (sdm listen), and waits there until a front end
// accepts or rejects it. The directory is the only channel between the
// two until the job's master dials the front end, so it is usually in the
// home directory, shared by the login and the compute nodes.
//
// Files in the directory, all written whole by rename, mode 0600:
//
//	ID.request  what the job is: who, where, which command (JSON)
//	ID.answer   the front end's answer: accepted (where to connect, and
//	            the session key) or rejected (why)
//	ID.failed   the job side could not start after it was accepted
//	ID.attach   MPIR: the attach command for the ranks the job side holds
//	ID.release  MPIR: the front end's verdict, "ok" or why not (post.go)
//
// What enters and leaves are these files: a Request from the job side, an
// Answer from the front end, and the typed messages of an MPIR job's attach
// step (PostAttach, PostRelease).
package connect

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"

	"github.com/sdm-hpc/sdm/wire"
)

// DirEnv names the directory of requests; ~/.sdm/connect by default.
const DirEnv = "SDM_CONNECT_DIR"

// Dir returns the directory of requests, made 0700 when it is missing,
// and refuses one that others may enter or that belongs to someone else:
// answers in it carry session keys.
func Dir() (string, error) {
	dir := os.Getenv(DirEnv)
	if dir == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("no %s and no home directory: %w", DirEnv, err)
		}
		dir = filepath.Join(home, ".sdm", "connect")
	}
	return dir, Secure(dir)
}

// Secure makes dir (0700) if it is missing and checks that only its
// owner, the user, may enter it.
func Secure(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("connect directory: %w", err)
	}
	info, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("connect directory: %w", err)
	}
	if !info.IsDir() {
		return fmt.Errorf("connect directory %s is not a directory", dir)
	}
	if st, ok := info.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Geteuid() {
		return fmt.Errorf("connect directory %s: %w: owned by uid %d, not by you (uid %d)", dir, wire.ErrInsecure, st.Uid, os.Geteuid())
	}
	if perm := info.Mode().Perm(); perm&0o077 != 0 {
		return fmt.Errorf("connect directory %s: %w: mode %04o lets others read the session keys handed over there (chmod 700 %s)", dir, wire.ErrInsecure, perm, dir)
	}
	return nil
}

// writeFile writes data to dir/name whole, mode 0600: a reader sees the
// old file or the new one, never half of it.
func writeFile(dir, name string, data []byte) error {
	f, err := os.CreateTemp(dir, "."+name+".*") // CreateTemp makes 0600
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), filepath.Join(dir, name))
	}
	if err != nil {
		os.Remove(f.Name())
	}
	return err
}

// ErrNotRegular is wrapped when a name in the directory is not a regular
// file: a FIFO would block the reader, a device or a link could stand
// for anything.
var ErrNotRegular = errors.New("not a regular file")

// readPrivate reads a file of the directory that must be the user's own
// and 0600: anything else was not written by sdm for this user. It never
// blocks on what it opens (O_NONBLOCK: a FIFO without a writer) and
// follows no symbolic link; its errors show the path Printable.
func readPrivate(path string) ([]byte, error) {
	name := Printable(path)
	fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0)
	switch {
	case errors.Is(err, syscall.ELOOP):
		return nil, fmt.Errorf("%s: %w: a symbolic link", name, ErrNotRegular)
	case errors.Is(err, syscall.ENOENT):
		return nil, &os.PathError{Op: "open", Path: name, Err: err}
	case err != nil:
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	f := os.NewFile(uintptr(fd), path)
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if !info.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: %w: %v", name, ErrNotRegular, info.Mode().Type())
	}
	if st, ok := info.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Geteuid() {
		return nil, fmt.Errorf("%s: %w: owned by uid %d, not by you", name, wire.ErrInsecure, st.Uid)
	}
	if perm := info.Mode().Perm(); perm&0o077 != 0 {
		return nil, fmt.Errorf("%s: %w: mode %04o, want 0600", name, wire.ErrInsecure, perm)
	}
	const limit = 1 << 20
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if len(data) > limit {
		return nil, fmt.Errorf("%s: larger than %d bytes", name, limit)
	}
	return data, nil
}
