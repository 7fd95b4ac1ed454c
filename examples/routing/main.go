// Command routing shows how a launcher embeds package routing: it writes a
// routing file for n servers on localhost, waits for it with a deadline as a
// debug server would, and prints the tree the servers form.
//
//	go run ./examples/routing -n 8 -file /tmp/x
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/sdm-hpc/sdm/routing"
)

func main() {
	n := flag.Int("n", 8, "number of servers")
	file := flag.String("file", "", "routing file to write (default: a file in a new temporary directory)")
	port := flag.Int("port", 50000, "port of server 0; server i listens on port+i")
	fanout := flag.Int("fanout", 0, "tree shape: 0 for PTP's binomial tree, K >= 2 for a K-ary tree")
	timeout := flag.Duration("timeout", 10*time.Second, "how long to wait for the routing file")
	flag.Parse()
	if err := run(*n, *file, *port, *fanout, *timeout); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func run(n int, file string, port, fanout int, timeout time.Duration) error {
	tree := routing.Tree{Size: n, Fanout: fanout}
	if err := tree.Verify(); err != nil {
		return err
	}
	entries := make([]routing.Entry, n)
	for i := range entries {
		entries[i] = routing.Entry{Index: i, Host: "localhost", Port: port + i}
	}
	table, err := routing.NewTable(entries)
	if err != nil {
		return err
	}
	if file == "" {
		dir, err := os.MkdirTemp("", "sdm-routing-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		file = filepath.Join(dir, "routes")
	}
	// A file left over from an earlier job would satisfy the wait at once
	// with the wrong addresses; a launcher removes it before starting the
	// servers.
	if err := os.Remove(file); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}

	// The launcher writes the file while the server side waits for it.
	written := make(chan error, 1)
	go func() { written <- routing.Write(file, table, nil) }()

	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	got, err := routing.Wait(ctx, file)
	if werr := <-written; werr != nil {
		return werr
	}
	if err != nil {
		return err
	}

	shape := "binomial"
	if fanout != 0 {
		shape = fmt.Sprintf("%d-ary", fanout)
	}
	fmt.Printf("%s: %d servers, %s tree of depth %d\n", file, got.Size(), shape, tree.Depth())
	printTree(tree, got)
	return nil
}

// printTree prints one node per line, indented by depth, depth first with
// an explicit stack so that large trees do not recurse deeply.
func printTree(tree routing.Tree, table *routing.Table) {
	type frame struct{ id, depth int }
	stack := []frame{{tree.Master(), 0}}
	for len(stack) > 0 {
		f := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		indent := strings.Repeat("  ", f.depth)
		if f.id == tree.Master() {
			fmt.Printf("%smaster (%d)\n", indent, f.id)
		} else {
			e, _ := table.Lookup(f.id)
			fmt.Printf("%s%d %s\n", indent, f.id, e.Addr())
		}
		kids := tree.Children(f.id)
		for i := len(kids) - 1; i >= 0; i-- {
			stack = append(stack, frame{kids[i], f.depth + 1})
		}
	}
}
