package routing

import (
	"fmt"
	"math/rand/v2"
	"strconv"
)

// Generate makes the table of a job with one server on each of hosts, in
// order (a host listed twice gets two), on distinct random ports of
// PortRange (not PTP's 50000-59999: see there). A port that still turns
// out to be taken makes its server fail at once with a message naming it.
func Generate(hosts []string) (*Table, error) {
	lo, hi := PortRange()
	entries := make([]Entry, len(hosts))
	used := make(map[string]bool)
	perHost := make(map[string]int)
	for i, h := range hosts {
		if perHost[h]++; perHost[h] > (hi-lo)/2 {
			return nil, fmt.Errorf("too many servers on host %s for ports %d-%d", h, lo, hi)
		}
		for {
			port := lo + rand.IntN(hi-lo+1)
			key := h + ":" + strconv.Itoa(port)
			if !used[key] {
				used[key] = true
				entries[i] = Entry{Index: i, Host: h, Port: port}
				break
			}
		}
	}
	return NewTable(entries)
}
