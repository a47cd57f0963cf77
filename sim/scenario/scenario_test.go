package scenario

import (
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

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
		{name: "negative readyAfter", yaml: "name: s\ndescription: d\ntimeline:\n  - at: 0s\n    join: {count: 1, readyAfter: -1s}\n", wantErr: "join.readyAfter -1s must not be negative"},
		{name: "afterBound is no action", yaml: base + "  - at: 1s\n    afterBound: true\n", wantErr: "exactly one action"},
		{name: "status report under a second", yaml: base + "kubelet: {nodeStatusReportFrequency: 500ms}\n", wantErr: "6: kubelet.nodeStatusReportFrequency 500ms: at least 1s"},
		{name: "negative status report", yaml: base + "kubelet: {nodeStatusReportFrequency: -1s}\n", wantErr: "6: kubelet.nodeStatusReportFrequency -1s"},
		{name: "gateStartsAfterBound alone", yaml: base + "gateStartsAfterBound: true\n", wantErr: "6: gateStartsAfterBound needs gateStartsAt"},
		{name: "gateStartsAfterBound late", yaml: base + "gateStartsAt: 2s\ngateStartsAfterBound: true\n"},
		{name: "a fault with a join", yaml: "name: s\ndescription: d\ntimeline:\n  - at: 0s\n    join: {count: 1}\n    watchDrops: {duration: 1s}\n", wantErr: "exactly one action"},
		{name: "unknown admission", yaml: base + "admission: later\n", wantErr: "admission"},
		{name: "reregister unknown node", yaml: base + "  - at: 1s\n    reregister: {node: nope}\n", wantErr: "has not joined"},
		{name: "reboot", yaml: base + "  - at: 1s\n    reboot: {nodes: [s-n0, s-n1]}\n"},
		{name: "reboot unknown node names its line", yaml: base + "  - at: 1s\n    reboot: {nodes: [s-n9]}\n", wantErr: `6: timeline[1].reboot: node "s-n9" has not joined before`},
		{name: "reboot of no node", yaml: base + "  - at: 1s\n    reboot: {}\n", wantErr: "6: timeline[1].reboot: name the nodes or a podNode"},
		{name: "suspend the default rule", yaml: base + "  - at: 1s\n    suspendRule: {rule: default, for: 2s}\n"},
		{name: "suspend no rule", yaml: base + "  - at: 1s\n    suspendRule: {rule: gpu, for: 2s}\n", wantErr: `6: timeline[1]: suspendRule: no gate rule "gpu"`},
		{name: "suspend for no time", yaml: base + "  - at: 1s\n    suspendRule: {rule: default}\n", wantErr: "6: timeline[1]: suspendRule.for must be positive"},
		{name: "reboot field typo", yaml: base + "  - at: 1s\n    reboot: {node: s-n0}\n", wantErr: "7: field node not found"},
		{name: "bad mode", yaml: base + "init:\n  - name: i\n    ready: {mode: sometimes}\n", wantErr: "ready.mode"},
		{name: "bad expect", yaml: base + "expect: {violations: maybe}\n", wantErr: "expect.violations"},
		{name: "duration typo", yaml: base + "timeout: 5 minutes\n", wantErr: "6:"},
		{name: "CPU that is no quantity", yaml: base + "workloads:\n  - {name: w, cpu: lots}\n", wantErr: `7: workloads[0].cpu "lots": want a non-negative quantity`},
		{name: "negative CPU", yaml: base + "workloads:\n  - {name: w, cpu: -1}\n", wantErr: "workloads[0].cpu"},
		{name: "a billion nodes", yaml: "name: s\ndescription: d\ntimeline:\n  - at: 0s\n    join: {count: 1000000000}\n", wantErr: "4: timeline[0].join.count 1000000000: a scenario joins at most 100000 nodes"},
		{name: "too many nodes in all", yaml: "name: s\ndescription: d\ntimeline:\n  - at: 0s\n    join: {count: 60000, prefix: a}\n  - at: 1s\n    join: {count: 60000, prefix: b}\n", wantErr: "timeline[1].join.count 60000"},
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

// TestAfterBound: afterBound and afterReleased ride on a step's one action; neither is an
// action of its own.
func TestAfterBound(t *testing.T) {
	sc, err := Parse([]byte("name: s\ndescription: d\ntimeline:\n  - at: 0s\n    join: {count: 2, prefix: n}\n" +
		"  - at: 1s\n    afterBound: true\n    webhookOutage: {duration: 1s}\n" +
		"  - at: 2s\n    afterReleased: true\n    reboot: {nodes: [s-n0]}\n"))
	if err != nil {
		t.Fatal(err)
	}
	s := sc.Timeline
	if s[0].AfterBound || !s[1].AfterBound || s[1].WebhookOutage == nil {
		t.Errorf("timeline %+v; want only the outage after bound", s)
	}
	if s[0].AfterReleased || s[1].AfterReleased || !s[2].AfterReleased || s[2].Reboot == nil {
		t.Errorf("timeline %+v; want only the reboot after released", s)
	}
}

// TestNodeNames: a scenario's nodes are exactly those its joins name; a node of another
// scenario whose name begins with this one's is not among them.
func TestNodeNames(t *testing.T) {
	sc, err := Parse([]byte("name: s\ndescription: d\ntimeline:\n  - at: 0s\n    join: {count: 2, prefix: n}\n" +
		"  - at: 1s\n    join: {count: 1, prefix: gpu-}\n  - at: 2s\n    nodeDelete: {node: s-n1}\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{"s-n0": true, "s-n1": true, "s-gpu-0": true}
	if got := sc.NodeNames(); !maps.Equal(got, want) {
		t.Errorf("NodeNames() = %v, want %v", got, want)
	}
	keep, err := Parse([]byte("name: s-keep\ndescription: d\ntimeline:\n  - at: 0s\n    join: {count: 1, prefix: n}\n"))
	if err != nil {
		t.Fatal(err)
	}
	for n := range keep.NodeNames() {
		if sc.NodeNames()[n] {
			t.Errorf("%s is s-keep's node, and NodeNames() of s counts it", n)
		}
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
	if got := len(s.Actions()); got != kinds {
		t.Fatalf("Step has %d action fields, Actions() knows %d", kinds, got)
	}
}

// TestScenarioFiles: every shipped scenario decodes strictly and says what it guards against.
func TestScenarioFiles(t *testing.T) {
	scs, err := LoadAll([]string{"../../scenarios"})
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

// lineFirst is how every Parse error starts: the line at fault, so that Load can prefix the
// file and an editor can jump to it.
var lineFirst = regexp.MustCompile(`^[0-9]+: .`)

// FuzzScenarioParse feeds Parse arbitrary YAML, seeded with every shipped scenario and every
// malformed one of testdata/scenario. A scenario file is user input to cmd/simulate: it must
// be refused with an error that names its line, or come back complete, with its defaults
// filled, so that the runner can build its objects without meeting a value that panics.
func FuzzScenarioParse(f *testing.F) {
	for _, glob := range []string{"../../scenarios/*.yaml", "../../testdata/scenario/*.input.yaml"} {
		files, err := filepath.Glob(glob)
		if err != nil || len(files) == 0 {
			f.Fatalf("no seeds in %s (%v)", glob, err)
		}
		for _, file := range files {
			data, err := os.ReadFile(file)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(data)
		}
	}
	f.Add([]byte("name: s\ndescription: d\nworkloads:\n  - {name: w, replicas: 1, cpu: 250m}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		sc, err := Parse(data)
		if err != nil {
			if sc != nil || !lineFirst.MatchString(err.Error()) {
				t.Fatalf("Parse() = %v, %q; want nil and an error that starts with its line", sc, err)
			}
			return
		}
		useParsed(t, sc)
	})
}

// useParsed does with a parsed scenario what the runner does before the plane sees it, and
// checks what Parse promises: one action a step, steps in time order, a validated gate.
func useParsed(t *testing.T, sc *Scenario) {
	t.Helper()
	if !sc.GateConfig.Validated() {
		t.Fatal("parsed scenario with an unvalidated gate config")
	}
	for i := range sc.Timeline {
		s := &sc.Timeline[i]
		if s.Action() == nil {
			t.Fatalf("timeline[%d] has %d actions, want 1", i, len(s.Actions()))
		}
		if i > 0 && s.At < sc.Timeline[i-1].At {
			t.Fatalf("timeline[%d] at %s comes after %s", i, s.At, sc.Timeline[i-1].At)
		}
		if s.Join != nil {
			s.Join.CoreTaints()
			sc.NodeName(s.Join.Prefix, s.Join.Count-1)
		}
	}
	var startup []corev1.Taint
	for _, r := range sc.GateConfig.Gating() {
		startup = append(startup, r.Taint)
	}
	sc.DaemonSetObjects("ns", startup)
	for _, w := range sc.Workloads {
		sc.Deployment("ns", w)
		sc.StatefulSet("ns", w)
	}
	sc.Exclusive()
	sc.FaultWindows()
}

// TestExclusive: a scenario has the plane to itself when it restarts the apiserver, changes
// the controller-manager or joins a large burst; only the restart makes the runner start the
// scheduler and controller-manager afresh after it.
func TestExclusive(t *testing.T) {
	head := "name: s\ndescription: d\ntimeline:\n  - at: 0s\n    join: {count: 2, prefix: n}\n"
	tests := []struct {
		name, yaml         string
		exclusive, restart bool
	}{
		{name: "small join", yaml: head},
		{name: "apiserver restart", yaml: head + "  - at: 1s\n    apiserverRestart: {down: 1s}\n", exclusive: true, restart: true},
		{name: "plane", yaml: head + "plane: {nodeMonitorGracePeriod: 8s}\n", exclusive: true},
		{name: "large burst", yaml: "name: s\ndescription: d\ntimeline:\n  - at: 0s\n    join: {count: 60, prefix: a}\n  - at: 1s\n    join: {count: 40, prefix: b}\n", exclusive: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sc, err := Parse([]byte(tt.yaml))
			if err != nil {
				t.Fatal(err)
			}
			if sc.Exclusive() != tt.exclusive || sc.RestartsAPIServer() != tt.restart {
				t.Errorf("Exclusive() = %v, RestartsAPIServer() = %v; want %v, %v", sc.Exclusive(), sc.RestartsAPIServer(), tt.exclusive, tt.restart)
			}
		})
	}
}
