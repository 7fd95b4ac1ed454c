package stackwalk

import "testing"

func TestParseMapping(t *testing.T) {
	for line, want := range map[string]mapping{
		"7f182817a000-7f182817c000 r-xp 00000000 00:00 0                          [vdso]": {
			start: 0x7f182817a000, end: 0x7f182817c000, perms: "r-xp", dev: "00:00", path: "[vdso]"},
		"560b30467000-560b30468000 r-xp 00001000 fe:00 10838274   /tmp/a dir/prog (deleted)": {
			start: 0x560b30467000, end: 0x560b30468000, offset: 0x1000, perms: "r-xp", dev: "fe:00", inode: 10838274,
			path: "/tmp/a dir/prog (deleted)"},
		"7ffd9e704000-7ffd9e725000 rw-p 00000000 00:00 0 ": {
			start: 0x7ffd9e704000, end: 0x7ffd9e725000, perms: "rw-p", dev: "00:00"},
	} {
		got, ok := parseMapping(line)
		if !ok || got != want {
			t.Errorf("parseMapping(%q) = %+v, %v; want %+v", line, got, ok, want)
		}
	}
	for _, bad := range []string{"", "7f-7e r-xp 0 00:00 0", "zz-7f r-xp 0 00:00 0", "10-20 r-xp 0 00:00"} {
		if _, ok := parseMapping(bad); ok {
			t.Errorf("parseMapping(%q) accepted", bad)
		}
	}
}
