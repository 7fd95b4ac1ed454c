package launcher

import (
	"bytes"
	"debug/elf"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Linked is what sdm learnt of a program from its ELF dynamic section:
// the MPI whose library it links, which decides who must start it.
type Linked struct {
	Program string // as the user gave it
	// MPI is the adapter that runs this MPI's programs: "openmpi",
	// "mpich", or "" when the program links no MPI that sdm knows.
	MPI string
	// Library is the DT_NEEDED entry that told, such as libmpi.so.40.
	Library string
	// Note says why nothing was learnt, when the program could not be read
	// as an ELF executable ("is a script, not an ELF executable", ...).
	Note string
}

// Name is the MPI's name for people: Open MPI or MPICH.
func (l Linked) Name() string {
	switch l.MPI {
	case "openmpi":
		return "Open MPI"
	case "mpich":
		return "MPICH"
	}
	return ""
}

// Why says what was found, for "sdm: using local (...)".
func (l Linked) Why() string {
	switch {
	case l.Library != "" && l.MPI == "":
		return fmt.Sprintf("%s links %s, of an MPI sdm cannot tell (Open MPI 1.x or an MPICH-ABI MPI): give --rm", l.Program, l.Library)
	case l.Library != "":
		return fmt.Sprintf("%s links %s", l.Program, l.Library)
	case l.Note != "":
		return l.Program + " " + l.Note
	}
	return l.Program + " links no MPI library"
}

// openMPILibraries and mpichLibraries are the libraries, by name without
// ".so" and version, that only one MPI's programs link: Open MPI's C
// library goes by the common name libmpi, which is its own only in its
// ABI version 40 (libmpi.so.12 was Open MPI 1.10's and is the MPICH ABI's).
var (
	openMPILibraries = map[string]bool{"libmpi_mpifh": true, "libmpi_usempif08": true, "libmpi_usempi_ignore_tkr": true,
		"libmpi_usempi": true, "libmpi_cxx": true, "libmpi_java": true, "liboshmem": true}
	mpichLibraries = map[string]bool{"libmpich": true, "libmpichfort": true, "libmpichcxx": true, "libmpichf90": true,
		"libfmpich": true, "libmpifort": true, "libmpicxx": true}
)

// ReadLinked finds the program as the backend does (a name with a slash
// is a path, relative to dir; a bare name is looked up in $PATH) and reads
// which MPI it links from its DT_NEEDED entries. A program that cannot be
// read links nothing, and Note says why: wrapper scripts are not followed.
func ReadLinked(program, dir string) Linked {
	l := Linked{Program: program}
	path := program
	if !strings.Contains(program, "/") {
		found, err := exec.LookPath(program)
		if err != nil {
			l.Note = "is not in $PATH"
			return l
		}
		path = found
	} else if !filepath.IsAbs(path) && dir != "" {
		path = filepath.Join(dir, path)
	}
	if err := executable(path); err != nil {
		l.Note = "cannot be run: " + strings.TrimPrefix(err.Error(), path+" ")
		return l
	}
	f, err := elf.Open(path)
	if err != nil {
		l.Note = notELF(path)
		return l
	}
	defer f.Close()
	libs, err := f.ImportedLibraries()
	if err != nil {
		l.Note = "has an unreadable dynamic section: " + err.Error()
		return l
	}
	for _, lib := range libs {
		stem, version, _ := strings.Cut(lib, ".so")
		version = strings.TrimPrefix(version, ".")
		switch {
		case openMPILibraries[stem] || stem == "libmpi" && (version == "40" || strings.HasPrefix(version, "40.")):
			l.MPI, l.Library = "openmpi", lib
		case mpichLibraries[stem]:
			l.MPI, l.Library = "mpich", lib
		case stem == "libmpi":
			l.Library = lib // an MPI, but whose?
			continue
		default:
			continue
		}
		return l
	}
	return l
}

// notELF says what a file that is not ELF is: a script (which sdm does
// not follow to the program it runs) or something else.
func notELF(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return "cannot be read: " + err.Error()
	}
	defer f.Close()
	head := make([]byte, 2)
	if n, _ := f.Read(head); n == 2 && bytes.Equal(head, []byte("#!")) {
		return "is a script, not an ELF executable: sdm does not look for the program it runs"
	}
	return "is not an ELF executable"
}
