package slurm

import (
	"fmt"
	"strconv"
	"strings"
)

// maxHosts bounds an expanded host list, so that a typo such as n[1-99999999]
// cannot make a server allocate without end.
const maxHosts = 1 << 20

// ExpandHosts expands a SLURM host list such as "n[1-3,7],login[01-02]"
// into its host names, keeping zero padding ("login01").
func ExpandHosts(list string) ([]string, error) {
	var hosts []string
	for _, item := range splitTop(list) {
		if item == "" {
			return nil, fmt.Errorf("host list %q: empty item", list)
		}
		expanded, err := expandItem(item)
		if err != nil {
			return nil, fmt.Errorf("host list %q: %w", list, err)
		}
		hosts = append(hosts, expanded...)
		if len(hosts) > maxHosts {
			return nil, fmt.Errorf("host list %q: more than %d hosts", list, maxHosts)
		}
	}
	return hosts, nil
}

// splitTop splits at the commas that are not inside brackets.
func splitTop(s string) []string {
	var items []string
	depth, start := 0, 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '[':
			depth++
		case ']':
			depth--
		case ',':
			if depth == 0 {
				items = append(items, s[start:i])
				start = i + 1
			}
		}
	}
	return append(items, s[start:])
}

// expandItem expands the first bracket of item, and the rest recursively.
func expandItem(item string) ([]string, error) {
	open := strings.IndexByte(item, '[')
	if open < 0 {
		if strings.ContainsAny(item, "]") {
			return nil, fmt.Errorf("%q: ] without [", item)
		}
		return []string{item}, nil
	}
	end := strings.IndexByte(item[open:], ']')
	if end < 0 {
		return nil, fmt.Errorf("%q: [ without ]", item)
	}
	end += open
	prefix, ranges, suffix := item[:open], item[open+1:end], item[end+1:]
	tails, err := expandItem(suffix)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, r := range strings.Split(ranges, ",") {
		loText, hiText, isRange := strings.Cut(r, "-")
		if !isRange {
			hiText = loText
		}
		lo, err1 := strconv.Atoi(loText)
		hi, err2 := strconv.Atoi(hiText)
		if err1 != nil || err2 != nil || lo < 0 || hi < lo {
			return nil, fmt.Errorf("%q: bad range %q", item, r)
		}
		if hi-lo >= maxHosts {
			return nil, fmt.Errorf("%q: range %q too large", item, r)
		}
		width := len(loText)
		for n := lo; n <= hi; n++ {
			num := fmt.Sprintf("%0*d", width, n)
			for _, t := range tails {
				out = append(out, prefix+num+t)
			}
			if len(out) > maxHosts {
				return nil, fmt.Errorf("%q: more than %d hosts", item, maxHosts)
			}
		}
	}
	return out, nil
}

// ExpandCounts expands a task count list such as "4,2,1(x2)" into one
// count per node.
func ExpandCounts(list string) ([]int, error) {
	var counts []int
	for _, item := range strings.Split(list, ",") {
		text, rep := item, 1
		if i := strings.Index(item, "(x"); i >= 0 && strings.HasSuffix(item, ")") {
			r, err := strconv.Atoi(item[i+2 : len(item)-1])
			if err != nil || r < 1 || r > maxHosts {
				return nil, fmt.Errorf("task counts %q: bad repeat in %q", list, item)
			}
			text, rep = item[:i], r
		}
		n, err := strconv.Atoi(text)
		if err != nil || n < 0 {
			return nil, fmt.Errorf("task counts %q: %q is not a count", list, item)
		}
		for range rep {
			counts = append(counts, n)
		}
		if len(counts) > maxHosts {
			return nil, fmt.Errorf("task counts %q: more than %d nodes", list, maxHosts)
		}
	}
	return counts, nil
}
