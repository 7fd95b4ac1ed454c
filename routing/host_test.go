package routing

import (
	"net"
	"os"
	"testing"
)

func TestPublicHost(t *testing.T) {
	t.Setenv(HostEnv, "login1.example")
	if h := PublicHost(); h != "login1.example" {
		t.Errorf("with %s set: %q", HostEnv, h)
	}
	t.Setenv(HostEnv, "")
	h := PublicHost()
	name, _ := os.Hostname()
	switch {
	case reachable(name):
		if h != name {
			t.Errorf("the host name %s resolves, but the public host is %q", name, h)
		}
	case net.ParseIP(h) == nil:
		t.Errorf("the host name %s does not resolve beyond the loopback, and the public host %q is no address", name, h)
	case net.ParseIP(h).IsLoopback() && interfaceAddress() != "":
		t.Errorf("public host %q, a loopback address, where interface address %s is there", h, interfaceAddress())
	}
	if reachable("localhost") {
		t.Error("localhost is taken for a name that other hosts reach")
	}
}

func TestLocal(t *testing.T) {
	name, err := os.Hostname()
	if err != nil {
		t.Skip(err)
	}
	t.Setenv("SLURMD_NODENAME", "n7")
	for host, want := range map[string]bool{
		name: true, name + ".cluster.example": true, "n7": true,
		"n8": false, "127.0.0.1": false, "10.1.2.3": false, "": false,
	} {
		if got := Local(host); got != want {
			t.Errorf("Local(%q) = %v, want %v", host, got, want)
		}
	}
}

func TestAddressToward(t *testing.T) {
	t.Setenv(HostEnv, "")
	if h := AddressToward("127.0.0.1"); h != PublicHost() {
		t.Errorf("toward this host's loopback: %q, want the public host %q", h, PublicHost())
	}
	ip := interfaceAddress()
	if ip == "" {
		t.Skip("no interface but the loopback")
	}
	if h := AddressToward(ip); h != ip {
		t.Errorf("toward this host's own %s: %q", ip, h)
	}
	t.Setenv(HostEnv, "login1.example")
	if h := AddressToward(ip); h != "login1.example" {
		t.Errorf("with %s set: %q", HostEnv, h)
	}
}

func TestInterfaceOf(t *testing.T) {
	if got := InterfaceOf("localhost"); got != "" {
		t.Errorf("localhost: %q, want none (the loopback)", got)
	}
	if got := InterfaceOf("no-such-host.invalid"); got != "" {
		t.Errorf("a name that does not resolve: %q", got)
	}
	ip := interfaceAddress()
	if ip == "" {
		t.Skip("no interface but the loopback")
	}
	if got := InterfaceOf(ip); got != ip {
		t.Errorf("this host's own %s: %q", ip, got)
	}
}
