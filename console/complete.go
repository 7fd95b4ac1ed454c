package console

import (
	"sort"
	"strings"
)

// Complete returns the completions of a partly typed line, whole lines as
// line editors want them: command names (and aliases) after an optional
// [SET], and set names inside the brackets.
func (c *Console) Complete(line string) []string {
	head, word := "", line
	if strings.HasPrefix(line, "[") {
		end := strings.IndexByte(line, ']')
		if end < 0 {
			// Inside the brackets: complete the last set name.
			i := strings.LastIndexAny(line, "[,")
			return c.completeSets(line[:i+1], line[i+1:])
		}
		head, word = line[:end+1], line[end+1:]
		trimmed := strings.TrimLeft(word, " ")
		head += word[:len(word)-len(trimmed)]
		word = trimmed
	}
	if strings.Contains(word, " ") {
		return nil // arguments: nothing sdm could know to offer
	}
	var out []string
	for _, cmd := range commands {
		for _, name := range append([]string{cmd.name}, cmd.aliases...) {
			if strings.HasPrefix(name, word) {
				out = append(out, head+name+" ")
			}
		}
	}
	sort.Strings(out)
	return out
}

func (c *Console) completeSets(head, word string) []string {
	c.mu.Lock()
	names := []string{"all"}
	for n := range c.sets {
		names = append(names, n)
	}
	c.mu.Unlock()
	var out []string
	for _, n := range names {
		if strings.HasPrefix(n, word) {
			out = append(out, head+n)
		}
	}
	sort.Strings(out)
	return out
}
