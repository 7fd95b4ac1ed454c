package connect

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func newDir(t *testing.T) string {
	dir := filepath.Join(t.TempDir(), "connect")
	if err := Secure(dir); err != nil {
		t.Fatal(err)
	}
	return dir
}

func plain(t *testing.T) *Request {
	r, err := NewRequest([]string{"./plain"}, Plan{Mode: ModeProcess, RM: "local", Size: 1, Program: []string{"./plain"}})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestRequestRoundTrip(t *testing.T) {
	dir := newDir(t)
	r := plain(t)
	if err := r.Write(dir); err != nil {
		t.Fatal(err)
	}
	info, _ := os.Stat(filepath.Join(dir, r.ID+".request"))
	if info.Mode().Perm() != 0o600 {
		t.Errorf("request mode %v", info.Mode())
	}
	reqs, skipped, err := Requests(dir)
	if err != nil || len(skipped) != 0 || len(reqs) != 1 || reqs[0].Nonce != r.Nonce || !reqs[0].Time.Equal(r.Time) {
		t.Fatalf("%v %v %v", reqs, skipped, err)
	}
}

// Requests of a process gone from this host are deleted; foreign,
// unprotected and garbled files are skipped with a reason.
func TestRequestsSkipAndClean(t *testing.T) {
	dir := newDir(t)
	stale := plain(t)
	stale.Pid = 1 << 30 // above any pid_max
	stale.Write(dir)
	os.WriteFile(filepath.Join(dir, "0badf00d.request"), []byte("{"), 0o600)
	os.WriteFile(filepath.Join(dir, "0000beef.request"), []byte("{}"), 0o644)
	renamed := plain(t)
	renamed.Write(dir)
	os.Rename(filepath.Join(dir, renamed.ID+".request"), filepath.Join(dir, "12345678.request"))
	reqs, skipped, err := Requests(dir)
	if err != nil || len(reqs) != 0 {
		t.Fatalf("%v %v", reqs, err)
	}
	want := []string{"0000beef.request: insecure permissions: mode 0644", "0badf00d.request: not a request", "12345678.request: not a request: id " + renamed.ID}
	if len(skipped) != len(want) {
		t.Fatalf("skipped %v", skipped)
	}
	for i, w := range want {
		if !strings.Contains(skipped[i].Error(), w) {
			t.Errorf("skipped %v, want %q", skipped[i], w)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, stale.ID+".request")); !os.IsNotExist(err) {
		t.Error("the stale request is still there")
	}
}

func TestSecure(t *testing.T) {
	dir := newDir(t)
	os.Chmod(dir, 0o750)
	if err := Secure(dir); err == nil || !strings.Contains(err.Error(), "mode 0750") {
		t.Errorf("0750: %v", err)
	}
	if os.Geteuid() == 0 {
		os.Chmod(dir, 0o700)
		os.Chown(dir, 65534, 65534)
		if err := Secure(dir); err == nil || !strings.Contains(err.Error(), "owned by uid 65534") {
			t.Errorf("someone else's: %v", err)
		}
	}
	file := filepath.Join(t.TempDir(), "f")
	os.WriteFile(file, nil, 0o600)
	if err := Secure(file); err == nil || !strings.Contains(err.Error(), "not a directory") {
		t.Errorf("a file: %v", err)
	}
}

func TestAnswer(t *testing.T) {
	dir := newDir(t)
	r := plain(t)
	if err := Reply(dir, r, Answer{Accept: true}); err == nil {
		t.Error("answered a request that is not there")
	}
	r.Write(dir)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	go Reply(dir, r, Answer{Accept: true, Address: "h:1", Key: "k"})
	a, err := WaitAnswer(ctx, dir, r)
	if err != nil || !a.Accept || a.Address != "h:1" {
		t.Fatalf("%+v %v", a, err)
	}
	if _, err := os.Stat(filepath.Join(dir, r.ID+".answer")); !os.IsNotExist(err) {
		t.Error("the answer, with its key, is still there")
	}
	// An answer for an older request of the same ID is refused.
	old := *r
	old.Nonce = strings.Repeat("0", 32)
	Reply(dir, &old, Answer{Accept: true})
	if _, err := WaitAnswer(ctx, dir, r); err == nil || !strings.Contains(err.Error(), "another request") {
		t.Errorf("wrong nonce: %v", err)
	}
	Fail(dir, r, os.ErrPermission)
	if err := WaitFailed(ctx, dir, r); err == nil || err.Error() != "permission denied" {
		t.Errorf("failed: %v", err)
	}
}

func FuzzParseRequest(f *testing.F) {
	r, _ := NewRequest([]string{"srun", "-n", "2", "./ring"}, Plan{Mode: ModeLauncher, RM: "slurm", Size: 2, Launcher: "srun", Program: []string{"./ring"}})
	good, _ := json.Marshal(r)
	f.Add(good)
	f.Add([]byte(`{}`))
	f.Add([]byte(`{"id":"0123abcd","argv":[""]}`))
	f.Add([]byte(`{"id":"0123abcd","argv":["x"],"pid":1,"host":"h","time":"2026-01-01T00:00:00Z","nonce":"00000000000000000000000000000000","plan":{"mode":"launcher","size":-1}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := ParseRequest(data, "f")
		if err == nil && (r.Plan.check() != nil || len(r.Argv) == 0 || !validID(r.ID)) {
			t.Fatalf("accepted %+v", r)
		}
	})
}

// Text from a request reaches the terminal escaped: no escape sequence,
// carriage return or newline of the request's fields gets through.
func TestRequestStringEscapesControlCharacters(t *testing.T) {
	r := plain(t)
	r.User = "me\x1b]0;owned\x07"
	r.Host = "node\r\nsdm: accepted everything"
	r.Dir = "/tmp/\x1b[2J"
	r.JobID = "1\u202e"
	r.Argv = []string{"./plain", "\x1b[31mred", "tab\there"}
	r.Plan.Program = []string{"\u009b31m\xff"}
	r.Plan.Mode = ModeLauncher
	got := r.String()
	for _, c := range got {
		if c < 0x20 || c == 0x7f || (c >= 0x80 && c < 0xa0) || c == '\u202e' {
			t.Fatalf("control character %U in %q", c, got)
		}
	}
	for _, want := range []string{`me\x1b]0;owned\a`, `node\r\nsdm: accepted everything`, `/tmp/\x1b[2J`, `\x1b[31mred`, `tab\there`, `\u009b31m\xff`} {
		if !strings.Contains(got, want) {
			t.Errorf("%q does not show %q", got, want)
		}
	}
	if p := Printable("plain text, é and 漢字"); p != "plain text, é and 漢字" {
		t.Errorf("printable text changed: %q", p)
	}
}

// A FIFO, a symbolic link or a directory named like a request is skipped
// at once with a reason: reading it must never block.
func TestRequestsSkipWhatIsNotARegularFile(t *testing.T) {
	dir := newDir(t)
	if err := syscall.Mkfifo(filepath.Join(dir, "x.request"), 0o600); err != nil {
		t.Fatal(err)
	}
	os.Symlink("/dev/zero", filepath.Join(dir, "y.request"))
	os.Mkdir(filepath.Join(dir, "z.request"), 0o700)
	os.WriteFile(filepath.Join(dir, "\x1b[2J.request"), []byte("{}"), 0o600)
	done := make(chan []error, 1)
	go func() {
		_, skipped, _ := Requests(dir)
		done <- skipped
	}()
	var skipped []error
	select {
	case skipped = <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Requests still blocked after 10 s on a FIFO")
	}
	text := fmt.Sprint(skipped)
	if len(skipped) != 4 || strings.Count(text, "not a regular file") != 3 {
		t.Fatalf("skipped: %v", skipped)
	}
	if strings.ContainsRune(text, 0x1b) {
		t.Errorf("a file name reached the report raw: %q", text)
	}
}
