package main

import (
	"embed"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/pflag"

	"github.com/sdm-hpc/sdm/internal/exit"
	"github.com/sdm-hpc/sdm/routing"
	"github.com/sdm-hpc/sdm/wire"
)

// The --help texts, one file each in help/. {flags} stands for the flags
// of the command, {dlopen} for the text about library loads.
//
//go:embed help/*.txt
var helpFiles embed.FS

// helpFile is the text of help/NAME.txt.
func helpFile(name string) string {
	text, _ := helpFiles.ReadFile("help/" + name + ".txt")
	return string(text)
}

// helpText fills in a --help text for the flags of fs.
func helpText(text string, fs *pflag.FlagSet) string {
	return strings.NewReplacer("{flags}", fs.FlagUsages(), "{dlopen}", helpFile("dlopen"),
		"{index-env}", strings.Join(routing.IndexEnv, ", "), "{key-env}", wire.KeyEnv).Replace(text)
}

func parseFlags(fs *pflag.FlagSet, args []string, usage string) (help bool, err error) {
	fs.Usage = func() { fmt.Fprint(os.Stderr, helpText(usage, fs)) }
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return true, nil
		}
		return false, exit.Usage(err)
	}
	return false, nil
}
