package routing

import (
	"context"
	"net"
	"os"
	"strings"
	"time"
)

// HostEnv names the host, or address, by which other hosts reach this
// one: for machines whose own name does not resolve where the job runs.
const HostEnv = "SDM_MASTER_HOST"

// lookupTimeout bounds the check that the host name resolves.
const lookupTimeout = 2 * time.Second

// PublicHost is what this host writes into the files that tell others
// where it listens (the master file, published routing entries): $HostEnv
// when set; else the host name when it resolves to an address other hosts
// can reach, as on any machine set up for MPI; else, since a name that
// does not resolve, or resolves to the loopback (127.0.0.1 in /etc/hosts,
// which on another host is that host), is of no use elsewhere, the
// address of the first interface that is up and not the loopback; else
// the loopback address, which still serves a job on this host alone.
func PublicHost() string {
	if h := os.Getenv(HostEnv); h != "" {
		return h
	}
	name, err := os.Hostname()
	if err == nil && reachable(name) {
		return name
	}
	if ip := interfaceAddress(); ip != "" {
		return ip
	}
	return "127.0.0.1"
}

// AddressToward is the address by which host reaches this one: $HostEnv
// when set; else this host's source address on its route toward host
// (of several interfaces, the one the other host's network is on),
// unless that is the loopback; else PublicHost. No packet is sent.
func AddressToward(host string) string {
	if h := os.Getenv(HostEnv); h != "" {
		return h
	}
	d := net.Dialer{Timeout: lookupTimeout}
	if conn, err := d.Dial("udp", net.JoinHostPort(host, "9")); err == nil {
		ip := conn.LocalAddr().(*net.UDPAddr).IP
		conn.Close()
		if !ip.IsLoopback() {
			return ip.String()
		}
	}
	return PublicHost()
}

// InterfaceOf is the address of this host's interface that name resolves
// to (not the loopback), or "" when it resolves to none.
func InterfaceOf(name string) string {
	ctx, cancel := context.WithTimeout(context.Background(), lookupTimeout)
	defer cancel()
	addrs, err := net.DefaultResolver.LookupHost(ctx, name)
	if err != nil {
		return ""
	}
	mine, err := net.InterfaceAddrs()
	if err != nil {
		return ""
	}
	for _, a := range addrs {
		ip := net.ParseIP(a)
		if ip == nil || ip.IsLoopback() {
			continue
		}
		for _, m := range mine {
			if ipnet, ok := m.(*net.IPNet); ok && ipnet.IP.Equal(ip) {
				return a
			}
		}
	}
	return ""
}

// reachable says whether name resolves to an address that is not the
// loopback.
func reachable(name string) bool {
	ctx, cancel := context.WithTimeout(context.Background(), lookupTimeout)
	defer cancel()
	addrs, err := net.DefaultResolver.LookupHost(ctx, name)
	for _, a := range addrs {
		if ip := net.ParseIP(a); err == nil && ip != nil && !ip.IsLoopback() {
			return true
		}
	}
	return false
}

// interfaceAddress is the first IPv4 address (else IPv6) of an interface
// that is up and not the loopback, or "".
func interfaceAddress() string {
	ifaces, err := net.Interfaces()
	if err != nil {
		return ""
	}
	var v6 string
	for _, iface := range ifaces {
		if iface.Flags&net.FlagUp == 0 || iface.Flags&net.FlagLoopback != 0 {
			continue
		}
		addrs, _ := iface.Addrs()
		for _, a := range addrs {
			ipnet, ok := a.(*net.IPNet)
			if !ok || !ipnet.IP.IsGlobalUnicast() {
				continue
			}
			if ipnet.IP.To4() != nil {
				return ipnet.IP.String()
			}
			if v6 == "" {
				v6 = ipnet.IP.String()
			}
		}
	}
	return v6
}

// Local says whether host is a name of this host: its host name, in the
// long or the short form, or the node name SLURM gave it
// ($SLURMD_NODENAME), which a routing table computed from SLURM's node
// list holds. A parent on this host is then reached on the loopback,
// whether or not its name resolves here. An address is never Local: a
// port bound to an address is reached there only.
func Local(host string) bool {
	if host == "" || net.ParseIP(host) != nil {
		return false
	}
	short := func(h string) string { h, _, _ = strings.Cut(h, "."); return h }
	names := []string{os.Getenv("SLURMD_NODENAME")}
	if me, err := os.Hostname(); err == nil {
		names = append(names, me)
	}
	for _, n := range names {
		if n != "" && (host == n || short(host) == short(n)) {
			return true
		}
	}
	return false
}
