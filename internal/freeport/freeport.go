// Package freeport finds a TCP port for a process the simulator starts (a gate replica,
// Karpenter, a real node's kubelet), which must be told its ports before it runs.
//
// The ports come from below the kernel's ephemeral range. A port from inside it (what
// listening on port 0 gives) is free only until the kernel hands it to an outgoing
// connection as its local port, and a test of the plane makes thousands of those: a
// Karpenter told such a port failed to bind it in CI and exited.
package freeport

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
)

// rangeFile holds the kernel's ephemeral range, "low high".
const rangeFile = "/proc/sys/net/ipv4/ip_local_port_range"

// window is how many ports below the ephemeral range Get picks from; lowest is the least
// port it picks, clear of the well-known and most registered ports.
const (
	window = 16384
	lowest = 10000
)

var (
	mu    sync.Mutex
	given = map[int]bool{} // ports this process has handed out, never handed out twice
)

// Get returns a TCP port that nothing listens on now, on any address, from below the
// ephemeral range. Another process may still take it before the caller's binds it; the
// window is wide, so that is rare, and the process then fails to start with a clear error.
func Get() (int, error) {
	lo, hi := pickRange(readRange())
	mu.Lock()
	defer mu.Unlock()
	for range 64 {
		port := lo + rand.IntN(hi-lo)
		if given[port] || !free(port) {
			continue
		}
		given[port] = true
		return port, nil
	}
	return 0, fmt.Errorf("no free TCP port in [%d, %d) after 64 tries", lo, hi)
}

// pickRange is the window of ports below the ephemeral range [low, high], or above it when
// the range starts too low to leave one.
func pickRange(low, high int) (lo, hi int) {
	if low-window >= lowest {
		return low - window, low
	}
	if low-lowest >= 1024 {
		return lowest, low
	}
	return min(high+1, 65535-1024), 65536
}

// readRange reads the ephemeral range, or Linux's default when it cannot.
func readRange() (low, high int) {
	low, high = 32768, 60999
	b, err := os.ReadFile(rangeFile)
	if err != nil {
		return low, high
	}
	f := strings.Fields(string(b))
	if len(f) != 2 {
		return low, high
	}
	l, err1 := strconv.Atoi(f[0])
	h, err2 := strconv.Atoi(f[1])
	if err := errors.Join(err1, err2); err != nil || l < 1 || h < l {
		return low, high
	}
	return l, h
}

// free reports whether port can be listened on on every address, as the processes we start
// listen (Karpenter on [::]:port).
func free(port int) bool {
	l, err := net.Listen("tcp", ":"+strconv.Itoa(port))
	if err != nil {
		return false
	}
	_ = l.Close()
	return true
}
