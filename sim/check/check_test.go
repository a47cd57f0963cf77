package sim

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestCheck(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(rv uint64) Mark { return Mark{RV: rv, Time: t0.Add(time.Duration(rv) * time.Millisecond)} }
	workload := func(rv uint64) Binding { return Binding{Pod: "ns/w", Mark: at(rv)} }
	agent := func(rv uint64) Binding { return Binding{Pod: "ns/agent", Mark: at(rv), Tolerates: true} }

	tests := []struct {
		name           string
		rec            NodeRecord
		bounds         Bounds
		wantKinds      []string
		wantStuck      int
		wantTolerating int
	}{
		{
			name: "bound after release",
			rec:  NodeRecord{Gated: true, TaintedAtCreate: true, Tainted: at(1), Created: at(1), InitReady: at(8), Released: at(10), Bindings: []Binding{workload(11)}},
		},
		{
			name:      "bound before release",
			rec:       NodeRecord{Gated: true, TaintedAtCreate: true, Tainted: at(1), Created: at(1), InitReady: at(8), Released: at(10), Bindings: []Binding{workload(9)}},
			wantKinds: []string{KindEarlyPod},
		},
		{
			name:      "never released",
			rec:       NodeRecord{Gated: true, TaintedAtCreate: true, Tainted: at(1), Created: at(1), Bindings: []Binding{workload(5)}},
			wantKinds: []string{KindEarlyPod},
			wantStuck: 1,
		},
		{
			name:           "tolerating agent early is reported, not a violation",
			rec:            NodeRecord{Gated: true, TaintedAtCreate: true, Tainted: at(1), Created: at(1), InitReady: at(8), Released: at(10), Bindings: []Binding{agent(5)}},
			wantTolerating: 1,
		},
		{
			name: "excluded node is not judged",
			rec:  NodeRecord{Gated: false, Created: at(1), Bindings: []Binding{workload(2)}},
		},
		{
			name:      "never tainted is not stuck, but its early pods count",
			rec:       NodeRecord{Gated: true, Created: at(1), Bindings: []Binding{workload(5)}},
			wantKinds: []string{KindEarlyPod},
		},
		{
			name:      "released before init ready",
			rec:       NodeRecord{Gated: true, TaintedAtCreate: true, Tainted: at(1), Created: at(1), InitReady: at(12), Released: at(10)},
			wantKinds: []string{KindPrematureRelease},
		},
		{
			name:   "released without readiness after max hold under the release policy",
			rec:    NodeRecord{Gated: true, TaintedAtCreate: true, Tainted: at(1), Created: at(1), Released: at(3001)},
			bounds: Bounds{TimeoutRelease: 3 * time.Second},
		},
		{
			name:   "released at min hold counted from a creationTimestamp the watch saw late",
			rec:    NodeRecord{Gated: true, TaintedAtCreate: true, Tainted: at(900), Created: at(900), CreatedAt: t0, InitReady: at(950), Released: at(5000)},
			bounds: Bounds{MinHold: 5 * time.Second},
		},
		{
			name:      "released long after ready",
			rec:       NodeRecord{Gated: true, TaintedAtCreate: true, Tainted: at(1), Created: at(1), InitReady: at(8), Released: at(2000)},
			bounds:    Bounds{ReleasedWithin: time.Second},
			wantKinds: []string{KindLateRelease},
		},
		{
			name:   "slow to become ready, prompt release: not late",
			rec:    NodeRecord{Gated: true, TaintedAtCreate: true, Tainted: at(1), Created: at(1), InitReady: at(30000), Released: at(30050)},
			bounds: Bounds{ReleasedWithin: time.Second},
		},
		{
			name:      "released before min hold",
			rec:       NodeRecord{Gated: true, TaintedAtCreate: true, Tainted: at(1), Created: at(1), InitReady: at(8), Released: at(10)},
			bounds:    Bounds{MinHold: 5 * time.Second},
			wantKinds: []string{KindEarlyRelease},
		},
		{
			name:      "backfill tainted a busy node",
			rec:       NodeRecord{Gated: true, Tainted: at(10), Created: at(1), InitReady: at(12), Released: at(20), Bindings: []Binding{workload(5)}},
			wantKinds: []string{KindEarlyPod, KindBusyBackfilled},
		},
		{
			name: "backfill of an idle node",
			rec:  NodeRecord{Gated: true, Tainted: at(3), Created: at(1), InitReady: at(12), Released: at(20), Bindings: []Binding{workload(25)}},
		},
		{
			name: "deleted before release is not stuck",
			rec:  NodeRecord{Gated: true, Created: at(1), Deleted: at(5)},
		},
		{
			name:      "late release",
			rec:       NodeRecord{Gated: true, TaintedAtCreate: true, Tainted: at(1), Created: at(1), Released: at(3000)},
			bounds:    Bounds{ReleasedWithin: time.Second, TimeoutRelease: time.Second},
			wantKinds: []string{KindLateRelease},
		},
		{
			name:      "foreign taint lost",
			rec:       NodeRecord{Gated: true, TaintedAtCreate: true, Tainted: at(1), Created: at(1), InitReady: at(8), Released: at(10), LostTaints: []string{"x:NoSchedule"}},
			wantKinds: []string{KindForeignTaintLost},
		},
		{
			name:      "completedAt rewritten",
			rec:       NodeRecord{Gated: true, TaintedAtCreate: true, Tainted: at(1), Created: at(1), InitReady: at(8), Released: at(10), CompletedAt: []string{"1", "2"}},
			wantKinds: []string{KindCompletedRewritten},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.rec.Name = "n"
			if tt.rec.CreatedAt.IsZero() {
				tt.rec.CreatedAt = tt.rec.Created.Time // creationTimestamp, as the gate counts
			}
			v := Check([]NodeRecord{tt.rec}, t0, tt.bounds)
			var kinds []string
			for _, viol := range v.Violations {
				kinds = append(kinds, viol.Kind)
			}
			if diff := cmp.Diff(tt.wantKinds, kinds); diff != "" {
				t.Errorf("violation kinds (-want +got):\n%s", diff)
			}
			if v.Stuck != tt.wantStuck || v.EarlyTolerating != tt.wantTolerating {
				t.Errorf("stuck %d tolerating %d, want %d %d", v.Stuck, v.EarlyTolerating, tt.wantStuck, tt.wantTolerating)
			}
		})
	}
}

func TestPercentiles(t *testing.T) {
	var ds []time.Duration
	for i := 100; i >= 1; i-- {
		ds = append(ds, time.Duration(i)*time.Millisecond)
	}
	want := Percentiles{P50: 50, P90: 90, P99: 99, Max: 100}
	if diff := cmp.Diff(want, percentiles(ds)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(Percentiles{}, percentiles(nil)); diff != "" {
		t.Errorf("empty (-want +got):\n%s", diff)
	}
}

func TestParseScenario(t *testing.T) {
	base := "name: s\ndescription: d\ntimeline:\n  - at: 0s\n    join: {count: 2, prefix: n}\n"
	tests := []struct {
		name, yaml, wantErr string
	}{
		{name: "valid", yaml: base},
		{name: "unknown field names its line", yaml: base + "bogus: 1\n", wantErr: "6: field bogus not found"},
		{name: "unknown nested field", yaml: "name: s\ndescription: d\ntimeline:\n  - at: 0s\n    join: {count: 2, prefx: n}\n", wantErr: "5: field prefx not found"},
		{name: "unknown gate field", yaml: base + "gate:\n  minHodl: 1s\n", wantErr: "7: gate:"},
		{name: "bad gate value", yaml: base + "gate:\n  timeoutPolicy: maybe\n", wantErr: "timeoutPolicy"},
		{name: "missing description", yaml: "name: s\n", wantErr: "description is required"},
		{name: "two actions in a step", yaml: "name: s\ndescription: d\ntimeline:\n  - at: 0s\n    join: {count: 1}\n    reregister: {node: s-0}\n", wantErr: "exactly one action"},
		{name: "no action in a step", yaml: base + "  - at: 1s\n", wantErr: "exactly one action"},
		{name: "a fault with a join", yaml: "name: s\ndescription: d\ntimeline:\n  - at: 0s\n    join: {count: 1}\n    watchDrops: {duration: 1s}\n", wantErr: "exactly one action"},
		{name: "unknown admission", yaml: base + "admission: later\n", wantErr: "admission"},
		{name: "reregister unknown node", yaml: base + "  - at: 1s\n    reregister: {node: nope}\n", wantErr: "has not joined"},
		{name: "bad mode", yaml: base + "init:\n  - name: i\n    ready: {mode: sometimes}\n", wantErr: "ready.mode"},
		{name: "bad expect", yaml: base + "expect: {violations: maybe}\n", wantErr: "expect.violations"},
		{name: "duration typo", yaml: base + "timeout: 5 minutes\n", wantErr: "6:"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sc, err := Parse([]byte(tt.yaml))
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				if sc.Timeout != 2*time.Minute || len(sc.Init) != 1 || sc.Expect.Violations != "none" {
					t.Errorf("defaults not applied: %+v", sc)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("error %v, want it to contain %q", err, tt.wantErr)
			}
		})
	}
}

// TestEveryStepKindRuns: each action field of Step is in the one list that validation counts
// and the runner dispatches on, so a kind cannot be accepted and then never run.
func TestEveryStepKindRuns(t *testing.T) {
	s := Step{}
	v := reflect.ValueOf(&s).Elem()
	kinds := 0
	for i := 0; i < v.NumField(); i++ {
		if f := v.Field(i); f.Kind() == reflect.Pointer {
			f.Set(reflect.New(f.Type().Elem()))
			kinds++
		}
	}
	if got := len(s.present()); got != kinds {
		t.Fatalf("Step has %d action fields, present() knows %d", kinds, got)
	}
}

// TestScenarioFiles: every shipped scenario decodes strictly and says what it guards against.
func TestScenarioFiles(t *testing.T) {
	scs, err := LoadAll([]string{"../scenarios"})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]string{}
	for _, sc := range scs {
		if prev, dup := seen[sc.Name]; dup {
			t.Errorf("scenario name %s used by %s and %s", sc.Name, prev, sc.File)
		}
		seen[sc.Name] = sc.File
		if !strings.Contains(sc.File, sc.Name+".yaml") {
			t.Errorf("%s: file name does not match scenario name %s", sc.File, sc.Name)
		}
	}
}

func TestKubeletDelayIsSeeded(t *testing.T) {
	tl := PodTimeline{After: 2 * time.Second, Jitter: time.Second}
	a := &Kubelet{Seed: 7}
	b := &Kubelet{Seed: 7}
	c := &Kubelet{Seed: 8}
	same, differ := true, false
	for _, n := range []string{"n0", "n1", "n2", "n3", "n4"} {
		da, db, dc := a.delay(n, "init", tl), b.delay(n, "init", tl), c.delay(n, "init", tl)
		same = same && da == db
		differ = differ || da != dc
		if da < time.Second || da > 3*time.Second {
			t.Errorf("delay %s outside 2s ± 1s", da)
		}
	}
	if !same || !differ {
		t.Errorf("same seed same schedule: %v; other seed differs: %v", same, differ)
	}
}
