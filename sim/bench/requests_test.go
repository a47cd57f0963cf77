package bench

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestComponentOf(t *testing.T) {
	for ua, want := range map[string]string{
		"startupgate-sim-kubelet":  compKubelet,
		"startupgate-sim-recorder": compRecorder,
		"startupgate-sim":          compSim,
		"kube-scheduler/v1.36.3 (linux/amd64) kubernetes/abc/scheduler":                                        compScheduler,
		"kube-controller-manager/v1.36.3 (linux/amd64) kubernetes/abc/system:serviceaccount:kube-system:x-ctl": compKCM,
		"startupgate-gate":            compGate,
		"gate/v0.0.0 (linux/amd64)":   compGate,
		"before-gate/v0.0.0 (linux)":  compGate, // a gate binary built under another name
		"gatekeeper/v3 (linux)":       compOther,
		"startupgate-floor":           compFloor,
		"kube-apiserver/v1.36.3 (x)":  compAPIServer,
		"kubectl/v1.36.3 (linux)":     compOther,
		"":                            compOther,
		"sim-taint-writer":            compOther,
		"startupgate-simulator-other": compSim, // the simulator's prefix, no more
	} {
		if got := componentOf(ua); got != want {
			t.Errorf("componentOf(%q) = %q, want %q", ua, got, want)
		}
	}
}

func TestRequestsIn(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	reqs := []request{
		{t0.Add(-time.Millisecond), compKubelet}, // before
		{t0, compKubelet},                        // at the start: counted
		{t0.Add(time.Second), compRecorder},
		{t0.Add(2 * time.Second), compKubelet}, // at the end: counted
		{t0.Add(2*time.Second + 1), compGate},  // after
	}
	got := requestsIn(reqs, t0, t0.Add(2*time.Second))
	if want := map[string]int{compKubelet: 2, compRecorder: 1}; !reflect.DeepEqual(got, want) {
		t.Errorf("requestsIn = %v, want %v", got, want)
	}
	if pn := perNode(got, 4); pn[compKubelet] != 0.5 || pn[compRecorder] != 0.25 {
		t.Errorf("perNode = %v", pn)
	}
	if pn := perNode(got, 0); pn != nil {
		t.Errorf("perNode of 0 nodes = %v, want nil (not measured)", pn)
	}
}

// TestReadAuditKeepsEveryRequest: the audit log's every request is kept with its sender,
// not only the Node writes the write counts read.
func TestReadAuditKeepsEveryRequest(t *testing.T) {
	log := strings.Join([]string{
		`{"verb":"create","userAgent":"startupgate-sim-kubelet","objectRef":{"resource":"nodes","name":"bench-gate-10-n1"},"responseStatus":{"code":201},"requestReceivedTimestamp":"2026-01-01T00:00:00.000000Z"}`,
		`{"verb":"patch","userAgent":"startupgate-gate","objectRef":{"resource":"nodes","name":"bench-gate-10-n1"},"responseStatus":{"code":200},"requestReceivedTimestamp":"2026-01-01T00:00:01.000000Z"}`,
		`{"verb":"watch","userAgent":"startupgate-sim-recorder","objectRef":{"resource":"pods"},"responseStatus":{"code":200},"requestReceivedTimestamp":"2026-01-01T00:00:00.500000Z"}`,
	}, "\n")
	a, err := readAudit(strings.NewReader(log))
	if err != nil {
		t.Fatal(err)
	}
	var comps []string
	for _, q := range a.requests {
		comps = append(comps, q.comp)
	}
	if want := []string{compKubelet, compGate, compRecorder}; !reflect.DeepEqual(comps, want) {
		t.Errorf("requests from %v, want %v", comps, want)
	}
	if c := a.counts["bench-gate-10"]; c.ok != 1 {
		t.Errorf("gate's node writes %+v, want 1", c)
	}
	runs := []RunResult{{Name: "bench-gate-10", Nodes: 2, Requests: requestsIn(a.requests, a.requests[0].at, a.requests[1].at)}}
	if got := requestsPerNode(runs, 10); got["bench-gate-10"][compRecorder] != 0.5 || got["bench-gate-10"][compGate] != 0.5 {
		t.Errorf("requestsPerNode = %v", got)
	}
}

// TestAuditFiles: the rotated files come first, oldest first, then the live log; other files
// beside them are not read.
func TestAuditFiles(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"audit.log", "audit-2026-11-23T14-55-41.432.log", "audit-2026-11-23T14-50-01.001.log", "audit-policy.yaml"} {
		if err := os.WriteFile(filepath.Join(dir, name), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	got, err := auditFiles(filepath.Join(dir, "audit.log"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range got {
		names = append(names, filepath.Base(f))
	}
	if want := []string{"audit-2026-11-23T14-50-01.001.log", "audit-2026-11-23T14-55-41.432.log", "audit.log"}; !reflect.DeepEqual(names, want) {
		t.Errorf("auditFiles = %v, want %v", names, want)
	}
}

func TestCPUSpent(t *testing.T) {
	got := cpuSpent(map[string]float64{"etcd": 1, "kube-apiserver": 10, "gone": 3},
		map[string]float64{"etcd": 3.5, "kube-apiserver": 9, "new": 2})
	// etcd spent 2.5; the apiserver's reading went down (a new process): left out; so are
	// processes read only once.
	if want := map[string]float64{"etcd": 2.5}; !reflect.DeepEqual(got, want) {
		t.Errorf("cpuSpent = %v, want %v", got, want)
	}
	if cpuSpent(map[string]float64{"etcd": 1}, nil) != nil {
		t.Error("no reading at the end must be nil (not measured)")
	}
}
