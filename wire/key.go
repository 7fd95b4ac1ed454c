package wire

import (
	"crypto/rand"
	"fmt"
	"os"

	"github.com/sdm-hpc/sdm/secret"
)

// KeySize is the length of a session key in bytes.
const KeySize = secret.Size

// KeyEnv is the environment variable that hands a session key to an SDM
// without putting it on a command line, where every user could read it.
const KeyEnv = secret.Env

// Key is the secret every link of one debug session proves it knows.
type Key = secret.Key

// NewKey returns a fresh random key.
func NewKey() (Key, error) {
	var k Key
	_, err := rand.Read(k[:])
	return k, err
}

// ParseKey reads a key in hex.
func ParseKey(text string) (Key, error) { return secret.Parse(text) }

// ErrInsecure is wrapped when a secret file or its directory is open to
// other users.
var ErrInsecure = secret.ErrInsecure

// ReadKeyFile reads a key file, which must be this user's alone
// (secret.ReadFile).
func ReadKeyFile(path string) (Key, error) { return secret.ReadFile(path) }

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
