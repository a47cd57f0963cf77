package bench

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// The large phase's memory guard. A plane of tens of thousands of cloud-sized Nodes holds
// each of them several times over: the apiserver's watch cache and its event history, the
// controller-manager's and the scheduler's informers, etcd, and the simulator's kubelet
// for the static nodes. On a machine too small for a size, the kernel's OOM killer would
// end the run, or stall the machine, midway through; the fill stops first, and the report
// says at how many nodes and what held the memory: what broke first.

// memoryShare is the share of the machine's memory, 1/memoryShare, that the fill leaves
// available. Each plane process is a Go process whose heap may grow to its next collection
// goal, one and a half times its live data at largeGOGC, after any reading: MemAvailable
// read between two collections overstates what is free.
const memoryShare = 4

// memoryCheckEvery is how many registrations the fill makes between two readings.
const memoryCheckEvery = 250

// errMemoryLow stops a fill: the size is not reached, and no larger one is tried.
var errMemoryLow = errors.New("the machine's memory ran low")

// meminfo is the machine's memory as /proc/meminfo gives it, in bytes.
type meminfo struct{ total, available uint64 }

// parseMeminfo reads MemTotal and MemAvailable from /proc/meminfo's text.
func parseMeminfo(raw string) (meminfo, error) {
	var m meminfo
	for _, line := range strings.Split(raw, "\n") {
		key, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		var into *uint64
		switch key {
		case "MemTotal":
			into = &m.total
		case "MemAvailable":
			into = &m.available
		default:
			continue
		}
		b, err := parseKB(v)
		if err != nil {
			return meminfo{}, fmt.Errorf("/proc/meminfo: %s: %w", key, err)
		}
		*into = b
	}
	if m.total == 0 {
		return meminfo{}, errors.New("/proc/meminfo: no MemTotal")
	}
	return m, nil
}

// parseKB reads a /proc figure given in kB ("  1234 kB"), in bytes.
func parseKB(v string) (uint64, error) {
	kb, err := strconv.ParseUint(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
	return kb << 10, err
}

// low says why the fill must stop here, or "" if it may go on.
func (m meminfo) low() string {
	if m.available >= m.total/memoryShare {
		return ""
	}
	return fmt.Sprintf("MemAvailable %.1f of %.1f GiB, under 1/%d", gib(m.available), gib(m.total), memoryShare)
}

func gib(b uint64) float64 { return float64(b) / (1 << 30) }

// memoryLow reads the machine's memory: why the fill must stop, or "" (also when it
// cannot be read, as on a machine without /proc: then the guard is off).
func memoryLow() string {
	raw, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return ""
	}
	m, err := parseMeminfo(string(raw))
	if err != nil {
		return ""
	}
	return m.low()
}
