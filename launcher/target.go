package launcher

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"time"

	"github.com/sdm-hpc/sdm/internal/text"
)

// target is where the job's launcher and master run: this machine, or a
// host reached with ssh (a cluster's login node, say), whose file system
// the compute nodes share.
type target struct {
	host string   // "" for this machine, else [user@]host
	ssh  []string // the ssh command and its options
}

func newTarget(host, sshCommand string) target {
	if host == "" {
		return target{}
	}
	ssh := strings.Fields(sshCommand)
	if len(ssh) == 0 {
		ssh = []string{"ssh"}
	}
	return target{host: host, ssh: ssh}
}

func (t target) remote() bool { return t.host != "" }

// machine is the target's host without a user.
func (t target) machine() string {
	_, host, found := strings.Cut(t.host, "@")
	if !found {
		return t.host
	}
	return host
}

// name is the target as people call it.
func (t target) name() string {
	if t.host == "" {
		h, _ := os.Hostname()
		return h
	}
	return t.host
}

// command turns argv, with env added to its environment, into the command
// that runs it on the target. Over ssh the remote shell gets one string,
// every word quoted, and a terminal (-tt), so that the remote command ends
// when the connection does (it gets SIGHUP) instead of running on.
func (t target) command(argv, env []string) []string {
	if !t.remote() {
		return argv
	}
	words := []string{"exec"}
	if len(env) > 0 {
		words = append(words, "env")
		for _, kv := range env {
			words = append(words, text.ShellQuote(kv))
		}
	}
	for _, a := range argv {
		words = append(words, text.ShellQuote(a))
	}
	return append(append(append([]string{}, t.ssh...), "-tt", t.host), strings.Join(words, " "))
}

// run runs a short shell script on the target and returns its output.
func (t target) run(ctx context.Context, script string, stdin []byte) (string, error) {
	argv := []string{"sh", "-c", script}
	if t.remote() {
		argv = append(append(append([]string{}, t.ssh...), t.host), script)
	}
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Stdin = bytes.NewReader(stdin)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(errOut.String())
		if msg == "" {
			msg = strings.TrimSpace(out.String())
		}
		return "", fmt.Errorf("on %s: %v: %s", t.name(), err, msg)
	}
	return strings.TrimSpace(out.String()), nil
}

// forward has ssh forward a port of the target to the local session port,
// so that a master on the target can reach a front end it could not
// otherwise (PTP's port forwarding). The target side of the forward binds
// its loopback only, unless the target's sshd sets GatewayPorts: the
// master must run on the target itself. It returns the target's port and
// the ssh process, to be killed at the end of the session.
func (t target) forward(ctx context.Context, localPort int) (int, *exec.Cmd, error) {
	// ssh takes the first value given for an option: LogLevel=INFO, which
	// the allocated port is told at, must come before the user's options.
	argv := append([]string{t.ssh[0], "-o", "LogLevel=INFO"}, t.ssh[1:]...)
	argv = append(argv, "-N", "-o", "ExitOnForwardFailure=yes", "-R", fmt.Sprintf("0:127.0.0.1:%d", localPort), t.host)
	cmd := exec.Command(argv[0], argv[1:]...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return 0, nil, err
	}
	if err := cmd.Start(); err != nil {
		return 0, nil, fmt.Errorf("forward the session port through %s: %w", t.host, err)
	}
	// ssh says which port it got: "Allocated port 41234 for remote forward to …".
	found := make(chan int, 1)
	var said strings.Builder
	go func() {
		sc := bufio.NewScanner(stderr)
		sent := false
		for sc.Scan() {
			if m := allocated.FindStringSubmatch(sc.Text()); m != nil && !sent {
				var port int
				fmt.Sscan(m[1], &port)
				found <- port
				sent = true
				continue
			}
			if said.Len() < 4096 {
				said.WriteString(sc.Text() + "\n")
			}
		}
		close(found)
		io.Copy(io.Discard, stderr)
	}()
	timer := time.NewTimer(30 * time.Second)
	defer timer.Stop()
	select {
	case port, ok := <-found:
		if ok {
			return port, cmd, nil
		}
		cmd.Wait()
		return 0, nil, fmt.Errorf("ssh to %s did not forward the session port: %s", t.host, strings.TrimSpace(said.String()))
	case <-timer.C:
	case <-ctx.Done():
	}
	cmd.Process.Kill()
	cmd.Wait()
	return 0, nil, fmt.Errorf("ssh to %s did not forward the session port within 30s", t.host)
}

var allocated = regexp.MustCompile(`Allocated port (\d+) for remote forward`)
