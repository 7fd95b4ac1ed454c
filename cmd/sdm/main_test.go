package main

import (
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/sdm-hpc/sdm/launcher"
)

// Every command's --help text is embedded, with its flags filled in.
func TestEveryCommandHasItsHelpText(t *testing.T) {
	names := []string{"sdm", "server", "dlopen"}
	for name := range commands {
		if name != "help" {
			names = append(names, name)
		}
	}
	for _, name := range names {
		if helpFile(name) == "" {
			t.Errorf("no help/%s.txt", name)
		}
	}
	fs := pflag.NewFlagSet("sdm debug", pflag.ContinueOnError)
	launcher.AddSessionFlags(fs)
	if text := helpText(helpFile("debug"), fs); strings.Contains(text, "{flags}") || !strings.Contains(text, "--dlopen-mode") {
		t.Errorf("sdm debug --help lacks its flags:\n%s", text)
	}
}
