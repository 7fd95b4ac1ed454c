package main

import (
	"flag"
	"io"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/sdm-hpc/sdm/backend"
	"github.com/sdm-hpc/sdm/console"
)

var update = flag.Bool("update", false, "write docs/COMMANDS.md")

// docs/COMMANDS.md is made from what sdm prints: each command's --help,
// and the console's help COMMAND for every console command. It is never
// edited by hand: go test ./cmd/sdm -run CommandReference -update.
func TestCommandReference(t *testing.T) {
	t.Setenv(backend.RanksPerGDBEnv, "") // the defaults, not this machine's
	var b strings.Builder
	b.WriteString("# Command reference\n\n" +
		"Made from sdm's own help texts: each command's `--help`, and the console's `help COMMAND`\n" +
		"for every console command. Do not edit it: `go test ./cmd/sdm -run CommandReference -update`\n" +
		"writes it again, and the test fails while it differs from what sdm prints.\n\n")
	names := []string{}
	for name := range commands {
		if name != "help" {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	b.WriteString("## sdm\n\n```\n" + helpFile("sdm") + "```\n\n")
	for _, name := range names {
		b.WriteString("## sdm " + name + "\n\n```\n" + helpOf(t, func() { commands[name]([]string{"--help"}) }) + "```\n\n")
	}
	b.WriteString("## sdm (a server)\n\n```\n" + helpOf(t, func() { runServer([]string{"--help"}) }) + "```\n\n")
	b.WriteString("## Console commands\n\n" + console.Reference())
	got := strings.TrimRight(b.String(), "\n") + "\n"
	const path = "../../docs/COMMANDS.md"
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil || string(want) != got {
		t.Errorf("docs/COMMANDS.md is not what sdm prints (%v): go test ./cmd/sdm -run CommandReference -update", err)
	}
}

// helpOf is what run prints on the standard output and error.
func helpOf(t *testing.T, run func()) string {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	savedOut, savedErr := os.Stdout, os.Stderr
	os.Stdout, os.Stderr = w, w
	read := make(chan string)
	go func() {
		text, _ := io.ReadAll(r)
		read <- string(text)
	}()
	run()
	os.Stdout, os.Stderr = savedOut, savedErr
	w.Close()
	return <-read
}
