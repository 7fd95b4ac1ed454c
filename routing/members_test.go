package routing

import "testing"

func TestHands(t *testing.T) {
	for _, c := range []struct {
		members          string
		rankTree, layout bool
		hands            bool
	}{
		{"", false, false, true},
		{MembersHand, false, false, true},
		{MembersHand, true, false, false},
		{MembersHand, false, true, false},
		{"", true, false, false},
		{MembersServe, false, false, false},
	} {
		if hands, err := Hands(c.members, c.rankTree, c.layout); err != nil || hands != c.hands {
			t.Errorf("Hands(%q, tree of ranks %v, layout %v) = %v, %v; want %v", c.members, c.rankTree, c.layout, hands, err, c.hands)
		}
	}
	if _, err := Hands("share", false, false); err == nil {
		t.Error("--members=share was taken")
	}
}
