package launcher

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/sdm-hpc/sdm/rm"
)

// Check makes sure, before anything is submitted, that what the job needs
// is there: the sdm binary, the debugger, the resource manager's launcher
// and the program, each an executable file. An error names the host and
// the path.
func Check(o Options, adapter rm.Adapter) error {
	host, _ := os.Hostname()
	var errs []error
	if err := executable(o.SDM); err != nil {
		errs = append(errs, fmt.Errorf("on %s: the sdm binary %w", host, err))
	}
	if o.Debugger == "gdb-mi" {
		if _, err := exec.LookPath("gdb"); err != nil {
			errs = append(errs, fmt.Errorf("on %s: gdb is not in $PATH (%s): install gdb", host, os.Getenv("PATH")))
		}
	}
	if launcher := adapter.Launcher(); launcher != "" {
		if o.Launcher != "" {
			launcher = o.Launcher
		}
		if path, err := exec.LookPath(launcher); err != nil {
			errs = append(errs, fmt.Errorf("on %s: %s, the launcher of --rm %s, is not installed or not in $PATH", host, launcher, adapter.Name()))
		} else if err := executable(path); err != nil {
			errs = append(errs, fmt.Errorf("on %s: the launcher %w", host, err))
		}
	}
	if o.Program != "" && o.Debugger == "gdb-mi" {
		if err := checkProgram(o.Program, o.Dir); err != nil {
			errs = append(errs, fmt.Errorf("on %s: %w", host, err))
		}
	}
	return errors.Join(errs...)
}

// checkProgram finds the program as a shell (and the gdb backend) would:
// a name with a slash is a path, a bare name is looked up in $PATH.
func checkProgram(name, dir string) error {
	if !strings.Contains(name, "/") {
		if _, err := exec.LookPath(name); err != nil {
			return fmt.Errorf("the program %s is not in $PATH", name)
		}
		return nil
	}
	if !filepath.IsAbs(name) && dir != "" {
		name = filepath.Join(dir, name)
	}
	if err := executable(name); err != nil {
		return fmt.Errorf("the program %w", err)
	}
	return nil
}

// executable says what is wrong with path as a program to run.
func executable(path string) error {
	info, err := os.Stat(path)
	switch {
	case err != nil:
		return fmt.Errorf("%s does not exist", path)
	case info.IsDir():
		return fmt.Errorf("%s is a directory", path)
	case info.Mode()&0o111 == 0:
		return fmt.Errorf("%s is not executable", path)
	}
	return nil
}

func splitHostPort(addr string) (string, string, error) { return net.SplitHostPort(addr) }
