package wire

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// KeySize is the length of a session key in bytes.
const KeySize = 32

// KeyEnv is the environment variable that hands a session key to an SDM
// without putting it on a command line, where every user could read it.
const KeyEnv = "SDM_SESSION_KEY"

// Key is the secret every link of one debug session proves it knows.
type Key [KeySize]byte

// NewKey returns a fresh random key.
func NewKey() (Key, error) {
	var k Key
	_, err := rand.Read(k[:])
	return k, err
}

// String returns the key in hex, the form KeyEnv and key files hold.
func (k Key) String() string { return hex.EncodeToString(k[:]) }

// ParseKey reads a key in hex.
func ParseKey(text string) (Key, error) {
	var k Key
	b, err := hex.DecodeString(strings.TrimSpace(text))
	if err != nil || len(b) != KeySize {
		return k, fmt.Errorf("session key must be %d hex digits", 2*KeySize)
	}
	copy(k[:], b)
	return k, nil
}

// ErrInsecure is wrapped when a secret file or its directory is open to
// other users.
var ErrInsecure = errors.New("insecure permissions")

// ReadKeyFile reads a key file. The file must be a regular file owned by
// us with mode 0600 or stricter, in a directory no one else can write to,
// because a key others can read lets them command the debugger.
func ReadKeyFile(path string) (Key, error) {
	if err := checkPrivate(path, 0o077); err != nil {
		return Key{}, err
	}
	if err := checkPrivate(filepath.Dir(path), 0o022); err != nil {
		return Key{}, err
	}
	text, err := os.ReadFile(path)
	if err != nil {
		return Key{}, err
	}
	k, err := ParseKey(string(text))
	if err != nil {
		return Key{}, fmt.Errorf("%s: %w", path, err)
	}
	return k, nil
}

// WriteKeyFile writes k to path with mode 0600. The directory must exist
// and should be 0700 (see SessionDir).
func WriteKeyFile(path string, k Key) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	_, err = f.WriteString(k.String() + "\n")
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// LoadKey finds the session key: the key file when path is set, else KeyEnv.
func LoadKey(path string, lookup func(string) (string, bool)) (Key, error) {
	if path != "" {
		return ReadKeyFile(path)
	}
	text, ok := lookup(KeyEnv)
	if !ok || text == "" {
		return Key{}, fmt.Errorf("no session key: set %s or pass --key-file (never on the command line)", KeyEnv)
	}
	k, err := ParseKey(text)
	if err != nil {
		return Key{}, fmt.Errorf("%s: %w", KeyEnv, err)
	}
	return k, nil
}

func checkPrivate(path string, forbidden os.FileMode) error {
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
