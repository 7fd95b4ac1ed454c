//go:build !amd64

package mpir

var breakpointInsn []byte

func trapPC(int) (uint64, error) { return 0, errArch }

func setPC(int, uint64) error { return errArch }

const archSupported = false
