package connect

import (
	"strconv"
	"unicode"
	"unicode/utf8"
)

// Printable returns s as it may reach a terminal: unchanged when every
// character is printable, else quoted the way Go quotes strings (\x1b,
// \n, \u202e, \xff), so that text from a file, a request or a peer can
// neither move the cursor, recolour the screen nor fake a line of output.
func Printable(s string) string {
	for _, r := range s {
		if r == utf8.RuneError || (!unicode.IsPrint(r) && r != ' ') {
			q := strconv.Quote(s)
			return q[1 : len(q)-1]
		}
	}
	return s
}
