package freeport

import (
	"net"
	"strconv"
	"testing"
)

func TestPickRange(t *testing.T) {
	for _, tc := range []struct {
		low, high, lo, hi int
	}{
		{32768, 60999, 16384, 32768}, // Linux's default
		{20000, 60999, 10000, 20000}, // a low range: from lowest up to it
		{1024, 60000, 60001, 65536},  // no room below: above it
		{1024, 65535, 64511, 65536},  // the whole range: the top, where outgoing ports are fewest
	} {
		if lo, hi := pickRange(tc.low, tc.high); lo != tc.lo || hi != tc.hi {
			t.Errorf("pickRange(%d, %d) = [%d, %d), want [%d, %d)", tc.low, tc.high, lo, hi, tc.lo, tc.hi)
		}
	}
}

// TestGetIsOutsideTheEphemeralRange asks for ports as a scenario does and checks that each
// is below the kernel's ephemeral range, new, and can be listened on.
func TestGetIsOutsideTheEphemeralRange(t *testing.T) {
	low, _ := readRange()
	seen := map[int]bool{}
	for range 200 {
		p, err := Get()
		if err != nil {
			t.Fatal(err)
		}
		if p >= low || seen[p] {
			t.Fatalf("port %d: in the ephemeral range (from %d) or handed out before (%v)", p, low, seen[p])
		}
		seen[p] = true
		l, err := net.Listen("tcp", ":"+strconv.Itoa(p))
		if err != nil {
			t.Fatalf("port %d from Get cannot be listened on: %v", p, err)
		}
		_ = l.Close()
	}
}
