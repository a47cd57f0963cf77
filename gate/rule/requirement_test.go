package rule

import (
	"encoding/json"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// TestAbsentConditionDefault: a requirement's defaultStatus is what an absent condition
// counts as; without one, an absent condition never holds (today's behaviour). A present
// condition is read as it is, whatever the default.
func TestAbsentConditionDefault(t *testing.T) {
	maint := func(def corev1.ConditionStatus) *Rule {
		return compile(t, Rule{Name: "maint", Taint: cniTaint, Conditions: []ConditionRequirement{{Type: "example.com/MaintenanceRequired", Status: corev1.ConditionFalse, DefaultStatus: def}}})
	}
	for _, tc := range []struct {
		name    string
		def     corev1.ConditionStatus
		present corev1.ConditionStatus // "" for absent
		release bool
	}{
		{"absent, no default: held", "", "", false},
		{"absent, default False meets False: released", corev1.ConditionFalse, "", true},
		{"absent, default True does not meet False: held", corev1.ConditionTrue, "", false},
		{"absent, default Unknown: held", corev1.ConditionUnknown, "", false},
		{"present True, default False: held", corev1.ConditionFalse, corev1.ConditionTrue, false},
		{"present False, no default: released", "", corev1.ConditionFalse, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := node()
			if tc.present != "" {
				n = node(withCondition("example.com/MaintenanceRequired", tc.present))
			}
			d := Decide(maint(tc.def), Readiness{}, Input{Node: n, Now: t0.Add(1e9)})
			if d.Release != tc.release {
				t.Errorf("Decide().Release = %v, want %v (%s)", d.Release, tc.release, d.Reason)
			}
		})
	}
}

func TestConditionRequirementJSON(t *testing.T) {
	for _, tc := range []struct {
		name, in, out string
		err           string
	}{
		{name: "short form", in: `"Ready=True"`, out: `"Ready=True"`},
		{name: "object without default writes the short form", in: `{"type":"Ready","status":"True"}`, out: `"Ready=True"`},
		{name: "object with default", in: `{"type":"X","status":"False","defaultStatus":"False"}`, out: `{"type":"X","status":"False","defaultStatus":"False"}`},
		{name: "unknown field", in: `{"type":"X","status":"False","default":"False"}`, err: "unknown field"},
		{name: "wrongly cased field", in: `{"type":"X","status":"False","defaultstatus":"False"}`, err: "unknown field"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var c ConditionRequirement
			err := json.Unmarshal([]byte(tc.in), &c)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("Unmarshal(%s) error = %v, want %q", tc.in, err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			out, err := json.Marshal(c)
			if err != nil || string(out) != tc.out {
				t.Errorf("Marshal() = %s, %v; want %s", out, err, tc.out)
			}
		})
	}
	r := Rule{Name: "bad", Taint: cniTaint, CompletedAnnotation: "x/y", Conditions: []ConditionRequirement{{Type: "X", Status: "False", DefaultStatus: "Maybe"}}}
	var errs Errors
	r.Compile("", &errs)
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), `conditions[0]: defaultStatus "Maybe": must be True, False or Unknown`) {
		t.Errorf("Compile() errors = %v, want the bad defaultStatus named", errs)
	}
}
