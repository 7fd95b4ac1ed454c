package routing

import (
	"os"
	"strconv"
	"strings"
)

// PortRange is where ports chosen for servers should come from: the 12000
// ports below the kernel's ephemeral range (read from /proc; 20000-31999
// where it cannot be read). PTP drew them from 50000-59999, which on Linux
// lies inside the ephemeral range that outgoing connections take their
// ports from, so a server could find its port taken by any connection of
// its node.
func PortRange() (lo, hi int) {
	lo, hi = 20000, 31999
	data, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return lo, hi
	}
	f := strings.Fields(string(data))
	if len(f) != 2 {
		return lo, hi
	}
	if first, err := strconv.Atoi(f[0]); err == nil && first > 2048 {
		hi = first - 1
		lo = max(1024, hi-11999)
	}
	return lo, hi
}
