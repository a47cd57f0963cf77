package autoscaler

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/yaml"
)

// TestInstanceTypesFile: the file is in the shape Karpenter's KWOK provider decodes (its
// cloudprovider.InstanceTypeOptions, whose offerings have Go-cased fields), one offering
// per capacity type and zone, with the defaults filled in.
func TestInstanceTypesFile(t *testing.T) {
	got, err := json.Marshal(instanceTypesFile([]InstanceType{
		{Name: "c-11x-amd64-linux", CPU: resource.MustParse("11"), Memory: resource.MustParse("44Gi")},
		{Name: "m-4x-arm64-linux", CPU: resource.MustParse("4"), Memory: resource.MustParse("32Gi"), Pods: 8, Arch: "arm64",
			Zones: []string{"a", "b"}, CapacityTypes: []string{"spot"}, Price: 0.5},
	}))
	if err != nil {
		t.Fatal(err)
	}
	want := `
- name: c-11x-amd64-linux
  architecture: amd64
  operatingSystems: [linux]
  resources: {cpu: "11", memory: 44Gi, pods: "110"}
  offerings:
  - Price: 1
    Available: true
    Requirements:
    - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
    - {key: topology.kubernetes.io/zone, operator: In, values: [test-zone-a]}
- name: m-4x-arm64-linux
  architecture: arm64
  operatingSystems: [linux]
  resources: {cpu: "4", memory: 32Gi, pods: "8"}
  offerings:
  - Price: 0.5
    Available: true
    Requirements:
    - {key: karpenter.sh/capacity-type, operator: In, values: [spot]}
    - {key: topology.kubernetes.io/zone, operator: In, values: [a]}
  - Price: 0.5
    Available: true
    Requirements:
    - {key: karpenter.sh/capacity-type, operator: In, values: [spot]}
    - {key: topology.kubernetes.io/zone, operator: In, values: [b]}
`
	compareYAML(t, want, got)
}

// TestNodePoolObject: the NodePool in karpenter.sh/v1's spelling, with its defaults: the
// default KWOKNodeClass, amd64, linux, on-demand, and no consolidation unless asked for.
func TestNodePoolObject(t *testing.T) {
	taint := corev1.Taint{Key: "startup.k8s.io/initializing", Value: "wait", Effect: corev1.TaintEffectNoSchedule}
	after := 90 * time.Second
	for _, tt := range []struct {
		name string
		pool NodePool
		want string
	}{
		{"defaults", NodePool{Name: "p"}, `
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: p}
spec:
  template:
    metadata: {}
    spec:
      nodeClassRef: {group: karpenter.kwok.sh, kind: KWOKNodeClass, name: default}
      requirements:
      - {key: kubernetes.io/arch, operator: In, values: [amd64]}
      - {key: kubernetes.io/os, operator: In, values: [linux]}
      - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
  disruption: {consolidationPolicy: WhenEmptyOrUnderutilized, consolidateAfter: Never}
`},
		{"everything", NodePool{Name: "p", NodeClass: "nc", Labels: map[string]string{"l": "v"}, StartupTaints: []corev1.Taint{taint},
			Taints: []corev1.Taint{{Key: "dedicated", Effect: corev1.TaintEffectNoExecute}}, Arch: "arm64", CapacityType: "spot",
			ConsolidationPolicy: "WhenEmpty", ConsolidateAfter: &after}, `
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: p}
spec:
  template:
    metadata: {labels: {l: v}}
    spec:
      nodeClassRef: {group: karpenter.kwok.sh, kind: KWOKNodeClass, name: nc}
      requirements:
      - {key: kubernetes.io/arch, operator: In, values: [arm64]}
      - {key: kubernetes.io/os, operator: In, values: [linux]}
      - {key: karpenter.sh/capacity-type, operator: In, values: [spot]}
      startupTaints: [{key: startup.k8s.io/initializing, value: wait, effect: NoSchedule}]
      taints: [{key: dedicated, effect: NoExecute}]
  disruption: {consolidationPolicy: WhenEmpty, consolidateAfter: 90s}
`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			u, err := tt.pool.Object()
			if err != nil {
				t.Fatal(err)
			}
			got, err := u.MarshalJSON()
			if err != nil {
				t.Fatal(err)
			}
			compareYAML(t, tt.want, got)
		})
	}
}

func TestNodeClass(t *testing.T) {
	got, err := NodeClass("default", 1500*time.Millisecond).MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	compareYAML(t, `
apiVersion: karpenter.kwok.sh/v1alpha1
kind: KWOKNodeClass
metadata: {name: default}
spec: {nodeRegistrationDelay: 1s}
`, got)
}

func compareYAML(t *testing.T, want string, got []byte) {
	t.Helper()
	var w, g any
	if err := yaml.Unmarshal([]byte(want), &w); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(w, g); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}
