package testenv

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// noNetwork puts an apt-get and an apt-cache first in $PATH that fail as
// apt does without a deb-src entry, and counts apt-get's calls in the file
// it returns.
func noNetwork(t *testing.T) (calls string) {
	t.Helper()
	bin := t.TempDir()
	calls = filepath.Join(bin, "calls")
	fake := "#!/bin/sh\necho \"$@\" >> " + calls + "\n" +
		"echo \"E: You must put some 'deb-src' URIs in your sources.list\"\nexit 100\n"
	if err := os.WriteFile(filepath.Join(bin, "apt-get"), []byte(fake), 0o755); err != nil {
		t.Fatal(err)
	}
	noSources := "#!/bin/sh\necho \"E: You must put some 'deb-src' URIs in your sources.list\" >&2\nexit 100\n"
	if err := os.WriteFile(filepath.Join(bin, "apt-cache"), []byte(noSources), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+":"+os.Getenv("PATH"))
	return calls
}

// A package that does not download is reported by name, with apt's words
// and the fix, and its programs are not built.
func TestThirdPartyDownloadFails(t *testing.T) {
	RequireTool(t, "tar")
	calls := noNetwork(t)
	p, err := buildThirdParty(filepath.Join(repoRoot(), "scripts", "thirdparty.sh"), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, pkg := range []string{"openmpi", "mpich", "hpcc"} {
		why := p.missing[pkg]
		if !strings.Contains(why, "deb-src") || !strings.Contains(why, "add one for the machine's release") {
			t.Errorf("%s: missing because %q", pkg, why)
		}
	}
	if b, _ := os.ReadFile(calls); strings.Count(string(b), "source --download-only") != 3 {
		t.Errorf("apt-get calls:\n%s", b)
	}
}

// Once built, the programs need no network: a second run with a failing
// apt-get finds everything in its cache.
func TestThirdPartyCached(t *testing.T) {
	tp := ThirdParty(t)
	for _, name := range []string{"ring_c", "uallreducef90", "hpcc"} {
		for _, mpi := range []string{"openmpi", "mpich"} {
			if _, err := os.Stat(tp.Program(t, mpi, name)); err != nil {
				t.Error(err)
			}
		}
	}
	calls := noNetwork(t)
	again, err := buildThirdParty(filepath.Join(repoRoot(), "scripts", "thirdparty.sh"), tp.dir)
	if err != nil || len(again.missing) > 0 {
		t.Fatalf("second run: %v, missing %v", err, again.missing)
	}
	if b, err := os.ReadFile(calls); err == nil {
		t.Errorf("the second run called apt-get:\n%s", b)
	}
}
