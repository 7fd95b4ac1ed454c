//go:build !(linux && amd64)

package debugregs

import "errors"

func probe() (bool, error) {
	return false, errors.New("debug registers not probed on this architecture")
}
