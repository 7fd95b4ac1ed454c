package wire

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// A session directory names its owner; the next one made beside it removes
// those whose owner is gone (or whose pid now belongs to another process),
// and leaves alone those of running owners and those it cannot tell.
func TestSessionDirRemovesStaleOnes(t *testing.T) {
	parent := t.TempDir()
	deadStamp := strconv.Itoa(1<<30) + " 4242" // above any pid_max
	dirs := map[string]string{                 // name: owner file ("" for none)
		"sdm-dead":     deadStamp,
		"sdm-recycled": strconv.Itoa(os.Getpid()) + " 1",
		"sdm-alive":    "", // filled below
		"sdm-unknown":  "",
		"other-dead":   deadStamp,
		"sdm-kept":     deadStamp, // a failed session's logs, the user told
		"sdm-old-kept": deadStamp, // the same, past keptFor
	}
	alive, err := processStamp(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	dirs["sdm-alive"] = alive
	for name, owner := range dirs {
		dir := filepath.Join(parent, name)
		os.Mkdir(dir, 0o700)
		os.WriteFile(filepath.Join(dir, "key"), []byte("secret\n"), 0o600)
		if owner != "" {
			os.WriteFile(filepath.Join(dir, ownerFile), []byte(owner+"\n"), 0o600)
		}
	}
	for _, name := range []string{"sdm-kept", "sdm-old-kept"} {
		if err := KeepSession(filepath.Join(parent, name)); err != nil {
			t.Fatal(err)
		}
	}
	old := time.Now().Add(-keptFor - time.Hour)
	os.Chtimes(filepath.Join(parent, "sdm-old-kept", keptFile), old, old)
	fresh, err := SessionDir(parent)
	if err != nil {
		t.Fatal(err)
	}
	for name, kept := range map[string]bool{"sdm-dead": false, "sdm-recycled": false, "sdm-alive": true, "sdm-unknown": true, "other-dead": true,
		"sdm-kept": true, "sdm-old-kept": false} {
		if _, err := os.Stat(filepath.Join(parent, name)); (err == nil) != kept {
			t.Errorf("%s: kept %v, want %v", name, err == nil, kept)
		}
	}
	owner, err := os.ReadFile(filepath.Join(fresh, ownerFile))
	if err != nil || string(owner) != alive+"\n" {
		t.Errorf("owner file of the new directory: %q %v, want %q", owner, err, alive)
	}
	if info, _ := os.Stat(fresh); info.Mode().Perm() != 0o700 {
		t.Errorf("new session directory mode %v", info.Mode())
	}
}
