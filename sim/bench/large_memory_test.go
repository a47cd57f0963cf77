package bench

import (
	"strings"
	"testing"
	"time"
)

func TestParseMeminfo(t *testing.T) {
	for _, tc := range []struct {
		name, raw string
		want      meminfo
		err       bool
	}{
		{"both", "MemTotal:       24684000 kB\nMemFree:  100 kB\nMemAvailable:   14000000 kB\n",
			meminfo{total: 24684000 << 10, available: 14000000 << 10}, false},
		{"no MemAvailable reads none available", "MemTotal: 1000 kB\n", meminfo{total: 1000 << 10}, false},
		{"no MemTotal", "MemAvailable: 1000 kB\n", meminfo{}, true},
		{"garbled", "MemTotal: lots kB\n", meminfo{}, true},
		{"empty", "", meminfo{}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseMeminfo(tc.raw)
			if (err != nil) != tc.err || got != tc.want {
				t.Errorf("parseMeminfo = %+v, %v; want %+v, error %v", got, err, tc.want, tc.err)
			}
		})
	}
}

// TestMeminfoLow: the fill stops once less than a quarter of the machine is available.
func TestMeminfoLow(t *testing.T) {
	for _, tc := range []struct {
		total, available uint64
		low              bool
	}{
		{24 << 30, 14 << 30, false},
		{24 << 30, 6 << 30, false},
		{24 << 30, 6<<30 - 1, true},
		{24 << 30, 0, true},
	} {
		why := meminfo{total: tc.total, available: tc.available}.low()
		if (why != "") != tc.low {
			t.Errorf("%d of %d available: low() = %q, want low %v", tc.available, tc.total, why, tc.low)
		}
	}
	if why := (meminfo{total: 24 << 30, available: 3 << 30}).low(); why != "MemAvailable 3.0 of 24.0 GiB, under 1/4" {
		t.Errorf("low() = %q", why)
	}
}

// TestLargeMarkdownStoppedFill: a size the fill stopped short of shows how far it got and
// what held the memory, measures nothing, and the targets are judged at the size before.
func TestLargeMarkdownStoppedFill(t *testing.T) {
	r := largeSynthetic()
	r.Sizes[1].Gate.Released = 1000
	r.Sizes = append(r.Sizes, LargeSize{Nodes: 50000, Reached: 37250,
		RSS:    map[string]uint64{"kube-apiserver": 9 << 30, "etcd": 2 << 30, "kube-controller-manager": 5 << 30, "kube-scheduler": 2 << 30, "simulator": 3 << 30},
		Errors: []string{"the fill stopped at 37250 static nodes: MemAvailable 5.9 of 23.5 GiB, under 1/4"}})
	md := r.String()
	for _, want := range []string{
		"| static nodes registered, when the fill stopped short | – | – | 37250 |",
		"| RSS after the fill: kube-apiserver / etcd / kube-controller-manager / kube-scheduler / simulator (MiB) | – | not measured | 9216 / 2048 / 5120 / 2048 / 3072 |",
		"| gate: process start to initial list reconciled (s) | 1.2 | 4.0 | not measured |",
		"| gate release p99, populated / empty ≤ 1.2 (10000 static nodes) | 1.30 | **no** |",
		"- 50000 static nodes: the fill stopped at 37250 static nodes",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("bench-large.md has no %q:\n%s", want, md)
		}
	}
}

// TestQuiet: the plane counts as quiet under a quarter of a core, all processes together.
func TestQuiet(t *testing.T) {
	w := 10 * time.Second
	for _, tc := range []struct {
		spent map[string]float64
		want  bool
	}{
		{nil, true},
		{map[string]float64{"kube-apiserver": 1, "kube-scheduler": 1}, true},
		{map[string]float64{"kube-apiserver": 1.5, "kube-scheduler": 1}, false},
		{map[string]float64{"kube-controller-manager": 9}, false},
	} {
		if got := quiet(tc.spent, w); got != tc.want {
			t.Errorf("quiet(%v, %s) = %v, want %v", tc.spent, w, got, tc.want)
		}
	}
}
