// Package connect is reverse connect: a job in a batch script asks to be
// debugged (sdm connect) by writing a request into a directory the user's
// front end watches (sdm listen), and waits there until a front end
// accepts or rejects it. The directory is the only channel between the
// two until the job's master dials the front end, so it is usually in the
// home directory, shared by the login and the compute nodes
// ($SDM_CONNECT_DIR, by default ~/.sdm/connect).
//
// Files in the directory, all written whole by rename, mode 0600, in a
// directory that must be the user's and 0700 (both sides refuse anything
// else and say why, since answers carry session keys):
//
//	ID.request  written by sdm connect: id, user and uid, host, cwd, the
//	            command, the batch job's id, time, pid, a nonce, and the
//	            plan: how sdm will debug the command (JSON)
//	ID.answer   written by sdm listen: accepted (the address to dial and
//	            the session key, and server options) or rejected (the
//	            reason); the request's nonce
//	ID.failed   written by sdm connect: why the job could not start after
//	            it was accepted, so that the front end stops waiting at
//	            once
//	ID.attach   written by sdm connect --mpir: the attach command's body
//	            (each rank's pid, whether before main) once the starter
//	            is held in MPIR_Breakpoint and the servers run
//	ID.release  written by sdm listen: "ok" once every rank is attached
//	            (the starter is let go), or why not (it is killed)
//	            (post.go)
//
// What enters and leaves are these files: a Request from the job side, an
// Answer from the front end, and the typed messages of an MPIR job's attach
// step (PostAttach, PostRelease).
//
// # Waiting and checking
//
// Both sides wait on the directory as servers wait on routing files
// (inotify, plus a once-a-second look for files written on other NFS
// clients). The front end lists only requests that parse, carry the user's
// uid and are 0600; it reports other files and skips
// them; a request whose process is gone from this host is deleted. The
// nonce ties an answer to its request. The job side removes the answer as
// soon as it has read it. Files are opened without blocking or following
// links and must be regular; untrusted text (requests, file names, a job's
// reasons) reaches the terminal quoted (Printable).
//
// # The session that follows
//
// On accept, the front end binds a session port (the loopback for a job
// on its own host; every interface otherwise, dialled at its host name or
// --client-host) and writes the answer. sdm connect then runs the job side
// of a launch there (launcher.Host): the checks, a private session
// directory with the key file, the job through its adapter, launch help
// and the master, which dials the front end; the front end
// (launcher.Pending) waits for every rank as in any launch, then loads the
// program in every rank (in the request's directory) and runs the
// commands. sdm connect stays until the job ends and exits with the
// launcher's status.
//
// The plan (PlanFor, Mode) comes from the command line: srun, mpirun,
// mpiexec, poe (by base name, mpirun.openmpi too) are split into the
// launcher's options, the rank count (from -n/-np/--ntasks/-procs, else
// SLURM_NTASKS or MP_PROCS) and the program, knowing which of each
// launcher's options take a value; any other command is -n processes of
// the local launcher. With --mpir the command is a starter run as it is:
// the job side holds it under MPIR and starts the rank servers
// (launcher.HostMPIR), the front end sends the attach command, and the
// starter goes on once every rank is held, as in sdm debug --mpir. The
// two MPIR files are typed messages: the job side
// (launcher.HostRequest) posts PostAttach and waits in WaitRelease; the
// front end (launcher.Listener.Take) waits in WaitAttach, has every rank
// attach, and answers with PostRelease.
//
// sdm listen runs one session after another; inside one, listen on keeps
// taking jobs. The console drives a console.Tree, which is one job's
// client.Session or a client.Joined (the jobs' ranks one after another,
// merged as one tree's). Each new job is named jobN; the session's end
// ends every job.
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
