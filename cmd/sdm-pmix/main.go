// Command sdm-pmix reads the process table of a job whose launcher is a
// PMIx server (Open MPI 5's mpirun, PRRTE's prterun and prte DVM), as a
// PMIx tool: what MPIR's MPIR_proctable gives for starters that have
// MPIR. sdm runs it when a starter has no MPIR; it is a program of its own
// so that sdm itself runs where no PMIx library is installed.
//
//	sdm-pmix table --pid PID [--nspace NSPACE]
//
// prints one JSON object: the server's pid, the job's namespace, the
// debugging attributes the server offers, and a {rank, host, executable,
// pid} per rank. Errors go to the standard error, and the exit status is 1.
package main

/*
#cgo pkg-config: pmix
#include <stdlib.h>
#include "tool.h"
*/
import "C"

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"unsafe"

	flag "github.com/spf13/pflag"

	"github.com/sdm-hpc/sdm/pmix"
)

func main() {
	fs := flag.NewFlagSet("sdm-pmix", flag.ContinueOnError)
	pid := fs.Int("pid", 0, "the process id of the job's PMIx server (mpirun, prterun, prte)")
	nspace := fs.String("nspace", "", "the job's namespace, where the server runs more than one job")
	fs.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: sdm-pmix table --pid PID [--nspace NSPACE]\n\nprints the job's process table as JSON, read as a PMIx tool.")
		fs.PrintDefaults()
	}
	if len(os.Args) < 2 || os.Args[1] != "table" {
		fs.Usage()
		os.Exit(2)
	}
	if err := fs.Parse(os.Args[2:]); err != nil {
		os.Exit(2)
	}
	if *pid <= 0 {
		fmt.Fprintln(os.Stderr, "sdm-pmix: --pid is required")
		os.Exit(2)
	}
	t, err := table(*pid, *nspace)
	if err != nil {
		fmt.Fprintf(os.Stderr, "sdm-pmix: pid %d: %v\n", *pid, err)
		os.Exit(1)
	}
	json.NewEncoder(os.Stdout).Encode(t)
}

// table connects to the server of pid and reads the job's table.
func table(pid int, nspace string) (pmix.Answer, error) {
	t := pmix.Answer{Server: pid}
	var cerr *C.char
	if C.sdm_connect(C.pid_t(pid), &cerr) != 0 {
		return t, cError(cerr)
	}
	defer C.sdm_disconnect()
	var list *C.char
	if C.sdm_debug_support(&list, &cerr) == 0 {
		t.Debug = C.GoString(list)
		C.free(unsafe.Pointer(list))
	} else {
		C.free(unsafe.Pointer(cerr))
	}
	if nspace == "" {
		if C.sdm_namespaces(&list, &cerr) != 0 {
			return t, cError(cerr)
		}
		all := C.GoString(list)
		C.free(unsafe.Pointer(list))
		var err error
		if nspace, err = job(all); err != nil {
			return t, err
		}
	}
	t.Nspace = nspace
	cns := C.CString(nspace)
	defer C.free(unsafe.Pointer(cns))
	var procs *C.sdm_proc
	var n C.size_t
	if C.sdm_proctable(cns, &procs, &n, &cerr) != 0 {
		return t, cError(cerr)
	}
	for _, p := range unsafe.Slice(procs, int(n)) {
		t.Procs = append(t.Procs, pmix.Proc{Rank: int(p.rank), Host: C.GoString(p.host), Executable: C.GoString(p.exe), Pid: int(p.pid)})
		C.free(unsafe.Pointer(p.host))
		C.free(unsafe.Pointer(p.exe))
	}
	C.free(unsafe.Pointer(procs))
	slices.SortFunc(t.Procs, func(a, b pmix.Proc) int { return a.Rank - b.Rank })
	return t, nil
}

// job picks the job's namespace from the server's: PRRTE's own daemons
// are the namespace that ends in @0.
func job(all string) (string, error) {
	var jobs []string
	for ns := range strings.SplitSeq(all, ",") {
		if ns = strings.TrimSpace(ns); ns != "" && !strings.HasSuffix(ns, "@0") {
			jobs = append(jobs, ns)
		}
	}
	switch len(jobs) {
	case 0:
		return "", fmt.Errorf("the server runs no job (its namespaces: %q)", all)
	case 1:
		return jobs[0], nil
	}
	return "", fmt.Errorf("the server runs %d jobs (%s): name one with --nspace", len(jobs), strings.Join(jobs, ", "))
}

func cError(s *C.char) error {
	defer C.free(unsafe.Pointer(s))
	return errors.New(C.GoString(s))
}
