// Package text makes what launchers and programs write safe to show on a
// terminal, and arguments safe to give a shell. Stdlib only.
package text

import "strings"

// Printable is s without the C0 control bytes a terminal would act on
// rather than show (a NUL a launcher ends its message with, a bell, a
// carriage return that would write over a line's rank), but for tab and
// newline; with escapes, ESC stays too, so that the escape sequences of a
// rank's own output (colours) reach the terminal as the program meant.
// DEL goes with them.
func Printable(s string, escapes bool) string {
	clean := true
	for i := 0; i < len(s); i++ {
		if drop(s[i], escapes) {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	// Byte by byte: no byte of a multi-byte UTF-8 sequence is below
	// 0x80, and bytes that are not UTF-8 stay as they are.
	b := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		if !drop(s[i], escapes) {
			b = append(b, s[i])
		}
	}
	return string(b)
}

func drop(c byte, escapes bool) bool {
	switch {
	case c == '\t' || c == '\n':
		return false
	case c == 0x1b:
		return !escapes
	}
	return c < 0x20 || c == 0x7f
}

// ShellQuote quotes s for a POSIX shell.
func ShellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=:,@+") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
