package step

import (
	"reflect"
	"testing"

	"github.com/startupgate/startupgate/sim/scenario"
)

// TestEveryStepKindRuns: a step carries out every action type that scenario.Step can hold,
// so a kind cannot be accepted by validation and then never run.
func TestEveryStepKindRuns(t *testing.T) {
	var s scenario.Step
	v := reflect.ValueOf(&s).Elem()
	for i := 0; i < v.NumField(); i++ {
		if f := v.Field(i); f.Kind() == reflect.Pointer {
			f.Set(reflect.New(f.Type().Elem()))
		}
	}
	acts := s.Actions()
	if len(acts) == 0 {
		t.Fatal("scenario.Step lists no actions")
	}
	for _, a := range acts {
		if st, err := New(a); err != nil || st == nil {
			t.Errorf("no step for %T: %v", a, err)
		}
	}
	if _, err := New(&struct{}{}); err == nil {
		t.Error("New made a step of an action that is no scenario action")
	}
}
