package wire

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestKeyFiles(t *testing.T) {
	dir, err := SessionDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	k, _ := NewKey()
	path := filepath.Join(dir, "key")
	if err := WriteKeyFile(path, k); err != nil {
		t.Fatal(err)
	}
	if info, _ := os.Stat(path); info.Mode().Perm() != 0o600 {
		t.Fatalf("key file mode %v", info.Mode())
	}
	if info, _ := os.Stat(dir); info.Mode().Perm() != 0o700 {
		t.Fatalf("session dir mode %v", info.Mode())
	}
	got, err := ReadKeyFile(path)
	if err != nil || got != k {
		t.Fatalf("read back: %v", err)
	}
	if err := WriteKeyFile(path, k); err == nil {
		t.Fatal("overwrote an existing key file")
	}
	os.Chmod(path, 0o644)
	if _, err := ReadKeyFile(path); !errors.Is(err, ErrInsecure) {
		t.Fatalf("0644 key file: %v", err)
	}
	os.Chmod(path, 0o600)
	os.Chmod(dir, 0o777)
	if _, err := ReadKeyFile(path); !errors.Is(err, ErrInsecure) {
		t.Fatalf("key in a world-writable directory: %v", err)
	}
}

func TestLoadKey(t *testing.T) {
	k, _ := NewKey()
	env := map[string]string{KeyEnv: k.String()}
	lookup := func(name string) (string, bool) { v, ok := env[name]; return v, ok }
	if got, err := LoadKey("", lookup); err != nil || got != k {
		t.Fatalf("from the environment: %v", err)
	}
	env[KeyEnv] = "zz"
	if _, err := LoadKey("", lookup); err == nil || !strings.Contains(err.Error(), KeyEnv) {
		t.Fatalf("bad key: %v", err)
	}
	delete(env, KeyEnv)
	if _, err := LoadKey("", lookup); err == nil || !strings.Contains(err.Error(), "never on the command line") {
		t.Fatalf("no key: %v", err)
	}
}
