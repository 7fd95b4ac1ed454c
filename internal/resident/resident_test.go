package resident

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"testing"
)

// counter lives in the executable's writable data, which DropExecutable
// must leave as it is.
var counter = 41

// The executable's code and constants shrink to what runs after, and
// the program's variables keep their values.
func TestDropExecutable(t *testing.T) {
	counter++
	want := counter
	before := exeRSS(t)
	if before == 0 {
		t.Fatal("no page of the executable is mapped before")
	}
	if err := DropExecutable(); err != nil {
		t.Fatal(err)
	}
	after := exeRSS(t)
	// What measuring runs comes back at once (with the pages around each
	// one): a quarter less is well clear of it.
	if after >= before*3/4 {
		t.Errorf("the executable's read-only pages: %d KB mapped before, %d KB after; want a quarter less at least", before, after)
	}
	if counter != want {
		t.Errorf("a variable of the program reads %d after, want %d", counter, want)
	}
}

// exeRSS is how much of the executable's read-only mappings is resident,
// in KB.
func exeRSS(t *testing.T) int {
	t.Helper()
	exe, err := os.Readlink("/proc/self/exe")
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	total, counting := 0, false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		switch {
		case len(fields) == 6 && strings.Contains(fields[0], "-"):
			counting = fields[5] == exe && fields[1][1] == '-'
		case counting && fields[0] == "Rss:":
			kb, err := strconv.Atoi(fields[1])
			if err != nil {
				t.Fatal(err)
			}
			total += kb
		}
	}
	return total
}
