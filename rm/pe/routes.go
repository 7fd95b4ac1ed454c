package pe

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/sdm-hpc/sdm/routing"
)

// Routes computes the routing table of a POE job from what POE tells each
// task: the number of tasks (MP_PROCS) and the host list that placed them,
// one host per task in task order (MP_HOSTFILE, or host.list in the
// working directory, as POE reads it; blank lines and lines starting with
// ! or * are skipped). The server of a task listens on portBase plus the
// task's index among the tasks on its host.
func Routes(lookup func(string) (string, bool), dir string, portBase int) (*routing.Table, error) {
	procsText, ok := lookup("MP_PROCS")
	if !ok || procsText == "" {
		return nil, fmt.Errorf("MP_PROCS is not set: not a task of a POE job")
	}
	procs, err := strconv.Atoi(procsText)
	if err != nil || procs < 1 {
		return nil, fmt.Errorf("MP_PROCS=%q is not a number of tasks", procsText)
	}
	path, _ := lookup("MP_HOSTFILE")
	if path == "" {
		path = "host.list"
	}
	if !filepath.IsAbs(path) {
		path = filepath.Join(dir, path)
	}
	hosts, err := readHosts(path)
	if err != nil {
		return nil, err
	}
	if len(hosts) < procs {
		return nil, fmt.Errorf("%s lists %d hosts for %d tasks", path, len(hosts), procs)
	}
	onHost := make(map[string]int)
	entries := make([]routing.Entry, procs)
	for i := range entries {
		h := hosts[i]
		entries[i] = routing.Entry{Index: i, Host: h, Port: portBase + onHost[h]}
		onHost[h]++
	}
	return routing.NewTable(entries)
}

func readHosts(path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("POE host list: %w", err)
	}
	defer f.Close()
	var hosts []string
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		text := strings.TrimSpace(sc.Text())
		if text == "" || text[0] == '!' || text[0] == '*' {
			continue
		}
		host := strings.Fields(text)[0]
		if len(host) > 255 {
			return nil, fmt.Errorf("%s:%d: host name longer than 255 bytes", path, line)
		}
		hosts = append(hosts, host)
	}
	return hosts, sc.Err()
}
