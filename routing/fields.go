package routing

// The PTP format separates fields by spaces and tabs only; these helpers work
// on the raw bytes so that parsing a million-line file allocates nothing per
// line beyond the host string.

func isSep(c byte) bool { return c == ' ' || c == '\t' }

// nextField returns the first field of s and what follows it.
func nextField(s []byte) (field, rest []byte) {
	for len(s) > 0 && isSep(s[0]) {
		s = s[1:]
	}
	i := 0
	for i < len(s) && !isSep(s[i]) {
		i++
	}
	return s[:i], s[i:]
}

// trimSep drops separators at both ends, leaving what a "trailing garbage"
// message should show.
func trimSep(s []byte) []byte {
	for len(s) > 0 && isSep(s[0]) {
		s = s[1:]
	}
	for len(s) > 0 && isSep(s[len(s)-1]) {
		s = s[:len(s)-1]
	}
	return s
}

// saturate is where atoi stops growing a number. It exceeds every limit the
// callers check (MaxSize, 65535) and still cannot overflow a 32-bit int.
const saturate = 100_000_000

// atoi parses a decimal made of ASCII digits only. Unlike strconv.Atoi it
// rejects signs, and it never fails on overflow: a huge number comes back as
// a value above saturate so that the caller reports it as out of range.
func atoi(b []byte) (int, bool) {
	if len(b) == 0 {
		return 0, false
	}
	n := 0
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		if n <= saturate {
			n = n*10 + int(c-'0')
		}
	}
	return n, true
}
