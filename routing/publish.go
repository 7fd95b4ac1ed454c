package routing

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// PublishDir is where servers that chose their own port publish their
// entries: ROUTING_FILE.d, one file per server named by its index.
//
// A launcher that knows nothing of where its ranks run (mpirun, mpiexec)
// cannot write the routing file before the servers start; and ports it
// picked for them could be taken by the time they bind. Instead each
// server binds any free port, publishes "index host port" here, and waits
// for the routing file, which the front end writes once every server has
// published (WaitPublished).
func PublishDir(routingFile string) string { return routingFile + ".d" }

// Publish writes e, the entry of the calling server, into the publish
// directory of routingFile, creating the directory if needed.
func Publish(routingFile string, e Entry) error {
	dir := PublishDir(routingFile)
	if msg := checkHost(e.Host); msg != "" {
		return fmt.Errorf("publish into %s: %s", dir, msg)
	}
	if e.Index < 0 || e.Index >= MaxSize || e.Port < 1 || e.Port > 65535 {
		return fmt.Errorf("publish into %s: bad entry %d %s %d", dir, e.Index, e.Host, e.Port)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("publish: %w", err)
	}
	err := writeAtomic(filepath.Join(dir, strconv.Itoa(e.Index)), func(w io.Writer) error {
		_, err := fmt.Fprintf(w, "%d %s %d\n", e.Index, e.Host, e.Port)
		return err
	})
	if err != nil {
		return fmt.Errorf("publish into %s: %w", dir, err)
	}
	return nil
}

// WaitPublished waits until servers 0..n-1 have all published their
// entries for routingFile and returns the table they make. When ctx ends
// first, the error says which servers are missing.
func WaitPublished(ctx context.Context, routingFile string, n int) (*Table, error) {
	if err := checkSize(n); err != nil {
		return nil, fmt.Errorf("routing: %w", err)
	}
	dir := PublishDir(routingFile)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("routing: %w", err)
	}
	var t *Table
	err := WaitFor(ctx, dir, "", "servers to publish into "+dir, func() (err error) {
		t, err = readPublished(dir, n)
		return err
	})
	return t, err
}

// Collect waits until servers 0..n-1 have all published their entries
// for routingFile, and writes the routing file from them: the front end's
// part for servers that publish (on a remote target, through sdm routes
// collect).
func Collect(ctx context.Context, routingFile string, n int) error {
	t, err := WaitPublished(ctx, routingFile, n)
	if err != nil {
		return err
	}
	return Write(routingFile, t, nil)
}

// readPublished reads what has been published; fewer than n entries is an
// incomplete table, naming the servers still missing.
func readPublished(dir string, n int) (*Table, error) {
	names, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	entries := make([]Entry, 0, n)
	for _, d := range names {
		if strings.HasPrefix(d.Name(), ".") {
			continue // a file still being written
		}
		path := filepath.Join(dir, d.Name())
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		e, err := parseEntryLine(path, data, n)
		if err != nil {
			return nil, err
		}
		entries = append(entries, e)
	}
	if len(entries) < n {
		have := make([]bool, n)
		for _, e := range entries {
			have[e.Index] = true
		}
		var missing []string
		for i, ok := range have {
			if !ok && len(missing) < 10 {
				missing = append(missing, strconv.Itoa(i))
			}
		}
		more := ""
		if n-len(entries) > len(missing) {
			more = ", …"
		}
		return nil, &incompleteError{name: dir, detail: fmt.Sprintf("%d of %d servers published; missing %s%s", len(entries), n, strings.Join(missing, ", "), more)}
	}
	return NewTable(entries)
}

// parseEntryLine reads a one-line file "index host port" whose index must
// be below n.
func parseEntryLine(path string, data []byte, n int) (Entry, error) {
	text := strings.TrimRight(string(data), "\r\n")
	f := strings.Fields(text)
	if len(f) != 3 || strings.ContainsAny(text, "\r\n") {
		return Entry{}, lineError(path, 1, "want one line \"index host port\", got %s", quote(data))
	}
	index, err := strconv.Atoi(f[0])
	if err != nil || index < 0 || index >= n {
		return Entry{}, lineError(path, 1, "index %s out of range 0-%d", quote([]byte(f[0])), n-1)
	}
	if msg := checkHost(f[1]); msg != "" {
		return Entry{}, lineError(path, 1, "%s", msg)
	}
	port, err := strconv.Atoi(f[2])
	if err != nil || port < 1 || port > 65535 {
		return Entry{}, lineError(path, 1, "port %s out of range 1-65535", quote([]byte(f[2])))
	}
	return Entry{Index: index, Host: f[1], Port: port}, nil
}
