//go:build !amd64

package stackwalk

import "runtime"

func getRegs(*stoppedThread) error { return checkArch() }

func checkArch() error { return &ArchError{Arch: runtime.GOARCH} }
