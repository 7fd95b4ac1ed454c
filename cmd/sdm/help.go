package main

import (
	_ "embed"
	"strings"

	"github.com/spf13/pflag"

	"github.com/sdm-hpc/sdm/routing"
	"github.com/sdm-hpc/sdm/wire"
)

// The --help texts, one file each in help/. {flags} stands for the flags
// of the command, {dlopen} for the text about library loads.
var (
	//go:embed help/attach.txt
	attachUsage string
	//go:embed help/connect.txt
	connectUsage string
	//go:embed help/debug.txt
	debugUsage string
	//go:embed help/dlopen.txt
	dlopenUsage string
	//go:embed help/listen.txt
	listenUsage string
	//go:embed help/requests.txt
	requestsUsage string
	//go:embed help/routes.txt
	routesUsage string
	//go:embed help/server.txt
	serverUsage string
	//go:embed help/sdm.txt
	usage string
)

// helpText fills in a --help text for the flags of fs.
func helpText(text string, fs *pflag.FlagSet) string {
	return strings.NewReplacer("{flags}", fs.FlagUsages(), "{dlopen}", dlopenUsage,
		"{index-env}", strings.Join(routing.IndexEnv, ", "), "{key-env}", wire.KeyEnv).Replace(text)
}
