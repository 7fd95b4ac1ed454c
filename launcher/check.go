package launcher

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/sdm-hpc/sdm/backend"
	"github.com/sdm-hpc/sdm/internal/text"
	"github.com/sdm-hpc/sdm/rm"
)

// Check makes sure, before anything is submitted, that what the job needs
// is there, where the job runs: the sdm binary, the debugger, the resource
// manager's launcher and the program, each an executable file. An error
// names the host and the path.
func Check(ctx context.Context, o Options, adapter rm.Adapter, t target) error {
	if t.remote() {
		return checkRemote(ctx, o, adapter, t)
	}
	host := t.name()
	var errs []error
	if err := executable(o.SDM); err != nil {
		errs = append(errs, fmt.Errorf("on %s: the sdm binary %w", host, err))
	}
	if o.Debugger == backend.GDB {
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
	if o.Program != "" && o.Debugger == backend.GDB {
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

// checkRemote makes the same checks on the target, in one ssh round trip.
func checkRemote(ctx context.Context, o Options, adapter rm.Adapter, t target) error {
	lines := []string{
		"test -f " + text.ShellQuote(o.SDM) + " && test -x " + text.ShellQuote(o.SDM) +
			" || echo " + text.ShellQuote("the sdm binary "+o.SDM+" does not exist or is not executable"),
	}
	if o.Debugger == backend.GDB {
		lines = append(lines, "command -v gdb >/dev/null || echo 'gdb is not in $PATH: install gdb'")
	}
	if launcher := adapter.Launcher(); launcher != "" {
		if o.Launcher != "" {
			launcher = o.Launcher
		}
		if !strings.Contains(launcher, "/") {
			lines = append(lines, "command -v "+text.ShellQuote(launcher)+" >/dev/null || echo "+
				text.ShellQuote(launcher+", the launcher of --rm "+adapter.Name()+", is not installed or not in $PATH"))
		} else {
			lines = append(lines, "test -x "+text.ShellQuote(launcher)+" || echo "+
				text.ShellQuote(launcher+", the launcher of --rm "+adapter.Name()+", is not installed"))
		}
	}
	if p := o.Program; p != "" && o.Debugger == backend.GDB {
		if strings.Contains(p, "/") {
			lines = append(lines, "test -f "+text.ShellQuote(p)+" && test -x "+text.ShellQuote(p)+
				" || echo "+text.ShellQuote("the program "+p+" does not exist or is not executable"))
		} else {
			lines = append(lines, "command -v "+text.ShellQuote(p)+" >/dev/null || echo "+text.ShellQuote("the program "+p+" is not in $PATH"))
		}
	}
	out, err := t.run(ctx, strings.Join(lines, "\n"), nil)
	if err != nil {
		return err
	}
	var errs []error
	for _, line := range strings.Split(out, "\n") {
		if line != "" {
			errs = append(errs, fmt.Errorf("on %s: %s", t.name(), line))
		}
	}
	return errors.Join(errs...)
}
