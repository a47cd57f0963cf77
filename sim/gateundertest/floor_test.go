package gateundertest

import (
	"encoding/json"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/startupgate/startupgate/gate"
)

// The floor is a yardstick, but it must still be a correct release: only the gate's taint
// goes, every other taint stays, and the write is guarded by the version it was computed from.
func TestFloorPatch(t *testing.T) {
	cfg := gate.DefaultConfig()
	foreign := corev1.Taint{Key: "example.com/other", Effect: corev1.TaintEffectNoSchedule}
	n := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "n", ResourceVersion: "42"},
		Spec:       corev1.NodeSpec{Taints: []corev1.Taint{foreign, cfg.Taint}},
	}
	raw, err := floorPatch(n, &cfg)
	if err != nil {
		t.Fatal(err)
	}
	var p struct {
		Metadata struct {
			ResourceVersion string            `json:"resourceVersion"`
			Annotations     map[string]string `json:"annotations"`
		} `json:"metadata"`
		Spec struct {
			Taints []corev1.Taint `json:"taints"`
		} `json:"spec"`
	}
	if err := json.Unmarshal(raw, &p); err != nil {
		t.Fatal(err)
	}
	if p.Metadata.ResourceVersion != "42" {
		t.Errorf("resourceVersion %q, want 42 (the write must be guarded)", p.Metadata.ResourceVersion)
	}
	if p.Metadata.Annotations[cfg.CompletedAnnotation] == "" {
		t.Errorf("no %s annotation: the recorder would never count the release", cfg.CompletedAnnotation)
	}
	if len(p.Spec.Taints) != 1 || p.Spec.Taints[0].Key != foreign.Key {
		t.Errorf("taints %v, want only the foreign one", p.Spec.Taints)
	}
	// An empty list must be written as [], not null-and-omitted: a merge patch without the
	// field would leave the gate's taint in place.
	n.Spec.Taints = []corev1.Taint{cfg.Taint}
	raw, _ = floorPatch(n, &cfg)
	if want := `"taints":[]`; !json.Valid(raw) || !strings.Contains(string(raw), want) {
		t.Errorf("patch %s does not contain %s", raw, want)
	}
}
