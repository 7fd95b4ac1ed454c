// Package secret is the session key as files and the environment hold
// it: its form, and the checks that a key file is this user's alone. It
// links nothing but the standard library's basics, so that a rank
// server's lean start (cmd/sdm-rank) can read its key at the cost of a
// file read; making keys and proving them (package wire) need more.
package secret

import (
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// Size is the length of a session key in bytes.
const Size = 32

// Env is the environment variable that hands a session key to an SDM
// without putting it on a command line, where every user could read it.
const Env = "SDM_SESSION_KEY"

// Key is the secret every link of one debug session proves it knows.
type Key [Size]byte

// String returns the key in hex, the form Env and key files hold.
func (k Key) String() string { return hex.EncodeToString(k[:]) }

// Parse reads a key in hex.
func Parse(text string) (Key, error) {
	var k Key
	b, err := hex.DecodeString(strings.TrimSpace(text))
	if err != nil || len(b) != Size {
		return k, fmt.Errorf("session key must be %d hex digits", 2*Size)
	}
	copy(k[:], b)
	return k, nil
}

// ErrInsecure is wrapped when a secret file or its directory is open to
// other users.
var ErrInsecure = errors.New("insecure permissions")

// ReadFile reads a key file. The file must be a regular file owned by
// us with mode 0600 or stricter, in a directory no one else can write to,
// because a key others can read lets them command the debugger.
func ReadFile(path string) (Key, error) {
	if err := CheckPrivate(path, 0o077); err != nil {
		return Key{}, err
	}
	if err := CheckPrivate(filepath.Dir(path), 0o022); err != nil {
		return Key{}, err
	}
	text, err := os.ReadFile(path)
	if err != nil {
		return Key{}, err
	}
	k, err := Parse(string(text))
	if err != nil {
		return Key{}, fmt.Errorf("%s: %w", path, err)
	}
	return k, nil
}

// CheckPrivate checks that path is ours and has none of the forbidden
// permission bits.
func CheckPrivate(path string, forbidden os.FileMode) error {
	info, err := os.Stat(path)
	if err != nil {
		return err
	}
	if perm := info.Mode().Perm(); perm&forbidden != 0 {
		return fmt.Errorf("%s: %w: mode %04o, want no %04o bits", path, ErrInsecure, perm, forbidden)
	}
	if st, ok := info.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Geteuid() {
		return fmt.Errorf("%s: %w: owned by uid %d, not by us (uid %d)", path, ErrInsecure, st.Uid, os.Geteuid())
	}
	return nil
}
