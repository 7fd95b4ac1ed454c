module github.com/sdm-hpc/sdm

go 1.26.0

require (
	github.com/flynn/noise v1.1.0
	github.com/hashicorp/yamux v0.1.2
	github.com/ianlancetaylor/demangle v0.0.0-20260724033716-83e58baca724
	github.com/peterh/liner v1.2.3
	github.com/spf13/pflag v1.0.10
	github.com/vmihailenco/msgpack/v5 v5.4.1
	golang.org/x/sys v0.49.0
)

require (
	github.com/clipperhouse/uax29/v2 v2.7.0 // indirect
	github.com/google/go-dap v0.12.0 // indirect
	github.com/mattn/go-runewidth v0.0.31 // indirect
	github.com/vmihailenco/tagparser/v2 v2.0.0 // indirect
	golang.org/x/crypto v0.58.0 // indirect
)
