package handover

import (
	"net"
	"os"
	"strconv"
	"syscall"
	"testing"

	"github.com/sdm-hpc/sdm/wire"
)

// keyPipe hands key over as DropKeyFromEnviron does, on a pipe named in
// KeyFDEnv, and leaves no key in the environment (where Take would
// execute the test again).
func keyPipe(t *testing.T, key string) {
	t.Helper()
	t.Setenv(wire.KeyEnv, "")
	os.Unsetenv(wire.KeyEnv)
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.WriteString(key); err != nil {
		t.Fatal(err)
	}
	w.Close()
	fd, err := syscall.Dup(int(r.Fd()))
	if err != nil {
		t.Fatal(err)
	}
	r.Close()
	t.Setenv(KeyFDEnv, strconv.Itoa(fd))
}

// listenerFD hands a listening socket down as the local launcher does.
func listenerFD(t *testing.T) net.Addr {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	f, err := ln.(*net.TCPListener).File()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(ListenFDEnv, strconv.Itoa(int(f.Fd())))
	t.Cleanup(func() { f.Close() })
	return ln.Addr()
}

func TestTakeTakesTheKeyTheSocketAndTheLaunchersGOMAXPROCS(t *testing.T) {
	key, err := wire.NewKey()
	if err != nil {
		t.Fatal(err)
	}
	keyPipe(t, key.String())
	addr := listenerFD(t)
	t.Setenv("GOMAXPROCS", "1")
	t.Setenv(GOMAXPROCSEnv, "1")
	h, err := Take("")
	if err != nil {
		t.Fatal(err)
	}
	defer h.Listener.Close()
	if h.Key != key {
		t.Error("Take read another key than the one handed over")
	}
	if h.Listener == nil || h.Listener.Addr().String() != addr.String() {
		t.Errorf("Take's listener is %v, want the one at %s", h.Listener, addr)
	}
	for _, name := range []string{KeyFDEnv, ListenFDEnv, "GOMAXPROCS", GOMAXPROCSEnv} {
		if v, ok := os.LookupEnv(name); ok {
			t.Errorf("$%s=%s is left for the program", name, v)
		}
	}
}

// A GOMAXPROCS the user set is the program's: it stays.
func TestTakeLeavesTheUsersGOMAXPROCS(t *testing.T) {
	key, _ := wire.NewKey()
	keyPipe(t, key.String())
	t.Setenv("GOMAXPROCS", "4")
	os.Unsetenv(GOMAXPROCSEnv)
	h, err := Take("")
	if err != nil {
		t.Fatal(err)
	}
	if h.Listener != nil {
		t.Errorf("a listener %v without %s", h.Listener.Addr(), ListenFDEnv)
	}
	if os.Getenv("GOMAXPROCS") != "4" {
		t.Errorf("GOMAXPROCS=%q, want the user's 4", os.Getenv("GOMAXPROCS"))
	}
}

func TestTakeSaysWhatIsWrongWithWhatItWasHanded(t *testing.T) {
	t.Setenv(wire.KeyEnv, "")
	os.Unsetenv(wire.KeyEnv)
	t.Setenv(KeyFDEnv, "1")
	if _, err := Take(""); err == nil || err.Error() != KeyFDEnv+`="1": not a descriptor` {
		t.Errorf("a key on standard output: %v", err)
	}
	key, _ := wire.NewKey()
	keyPipe(t, key.String())
	t.Setenv(ListenFDEnv, "x")
	if _, err := Take(""); err == nil || err.Error() != ListenFDEnv+`="x": not an inherited file descriptor` {
		t.Errorf("a socket named x: %v", err)
	}
}
