package scenario

import (
	"reflect"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestFaultWindows(t *testing.T) {
	sc, err := Parse([]byte(`name: w
description: fault windows
gateStartsAt: 2s
gateProcess: {replicas: 2}
timeline:
  - at: 0s
    join: {count: 3, prefix: n}
  - at: 4s
    leaderFailover: {}
  - at: 1s
    webhookOutage: {duration: 4s}
  - at: 3s
    apiserverRestart: {down: 1500ms}
  - at: 5s
    bypassPods: {count: 2}
  - at: 6s
    nodeDelete: {node: w-n0}
`))
	if err != nil {
		t.Fatal(err)
	}
	want := []Window{
		{Name: "no gate yet", End: 2 * time.Second},
		{Name: "webhook outage (refuse)", Start: time.Second, End: 5 * time.Second},
		{Name: "apiserver down", Start: 3 * time.Second, End: 4500 * time.Millisecond},
		{Name: "leader killed", Start: 4 * time.Second, End: 4 * time.Second},
		{Name: "2 bypass Pods", Start: 5 * time.Second, End: 5 * time.Second},
	}
	if diff := cmp.Diff(want, sc.FaultWindows()); diff != "" {
		t.Errorf("FaultWindows (-want +got):\n%s", diff)
	}
}

// TestEveryFaultHasAWindow holds fault to the step kinds: every kind but those that shape
// the cluster is a fault and has a name, so a fault added to Step is drawn.
func TestEveryFaultHasAWindow(t *testing.T) {
	notFaults := map[string]bool{"Join": true, "Reregister": true, "Scale": true, "NodeDelete": true, "Relabel": true}
	st := reflect.TypeOf(Step{})
	for i := 0; i < st.NumField(); i++ {
		f := st.Field(i)
		if f.Type.Kind() != reflect.Pointer {
			continue
		}
		var s Step
		reflect.ValueOf(&s).Elem().Field(i).Set(reflect.New(f.Type.Elem()))
		if s.Action() == nil {
			t.Errorf("%s: not an action of Step.Actions", f.Name)
			continue
		}
		name, _, ok := fault(&s)
		if ok == notFaults[f.Name] || (ok && name == "") {
			t.Errorf("%s: fault() = %q, %v; want a named window exactly for faults", f.Name, name, ok)
		}
	}
}
