package wire

import "testing"

func TestFailuresNamesEveryFailingGroup(t *testing.T) {
	groups := []Group{
		{Ranks: Range(0, 1), Status: StatusOK},
		{Ranks: Range(2, 3), Status: StatusError, Body: []byte("no such file")},
		{Ranks: Single(5), Status: StatusLost, Body: []byte("connection closed by server 5")},
	}
	err := Failures(groups, "start ./ring", nil)
	want := "ranks 2-3 could not start ./ring: error: no such file\n" +
		"ranks 5 could not start ./ring: lost: connection closed by server 5"
	if err == nil || err.Error() != want {
		t.Fatalf("got %v, want\n%s", err, want)
	}
	where := func(r RankSet) string { return "vm" + r.String() }
	err = Failures(groups[1:2], "attach", where)
	if want := "ranks 2-3 (vm2-3) could not attach: error: no such file"; err == nil || err.Error() != want {
		t.Fatalf("got %v, want %s", err, want)
	}
}

func TestFailuresNilWhenAllAnswered(t *testing.T) {
	if err := Failures([]Group{{Ranks: All(4), Status: StatusOK}}, "start", nil); err != nil {
		t.Fatal(err)
	}
	if err := Failures(nil, "start", nil); err != nil {
		t.Fatal(err)
	}
}
