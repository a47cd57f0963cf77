package autoscaler

import (
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// The resources Karpenter's KWOK provider reads and writes, for a dynamic client.
var (
	NodePools       = schema.GroupVersionResource{Group: "karpenter.sh", Version: "v1", Resource: "nodepools"}
	NodeClaims      = schema.GroupVersionResource{Group: "karpenter.sh", Version: "v1", Resource: "nodeclaims"}
	KWOKNodeClasses = schema.GroupVersionResource{Group: "karpenter.kwok.sh", Version: "v1alpha1", Resource: "kwoknodeclasses"}
)

const (
	// CapacityTypeLabel is Karpenter's capacity-type label (on-demand or spot).
	CapacityTypeLabel = "karpenter.sh/capacity-type"
	// OnDemand is the capacity type a NodePool asks for by default.
	OnDemand = "on-demand"
	// DefaultZone is the zone of an instance type that names none.
	DefaultZone = "test-zone-a"
	// DefaultNodeClass is the KWOKNodeClass a NodePool refers to when it names none.
	DefaultNodeClass = "default"
)

// InstanceType is one instance type Karpenter may launch: its Nodes have this capacity.
// Karpenter reserves 100m CPU and 10Mi of memory of it for the kubelet, so a node fits
// floor((CPU - 100m) / request) Pods of a given CPU request.
type InstanceType struct {
	// Name, e.g. "c-16x-amd64-linux": Karpenter derives the instance family and size labels
	// from it.
	Name   string
	CPU    resource.Quantity
	Memory resource.Quantity
	// Pods is the node's Pod capacity; 0: 110, as a kubelet's default.
	Pods int
	// Arch is the node's architecture; empty: amd64.
	Arch string
	// Zones where it is offered; empty: DefaultZone.
	Zones []string
	// CapacityTypes it is offered as; empty: on-demand.
	CapacityTypes []string
	// Price of every offering; 0: 1.
	Price float64
}

// The KWOK provider's instance-types file (INSTANCE_TYPES_FILE_PATH), as its
// cloudprovider.InstanceTypeOptions decodes it: the offering's fields are Go-cased there.
type (
	instanceTypeJSON struct {
		Name             string              `json:"name"`
		Offerings        []offeringJSON      `json:"offerings"`
		Architecture     string              `json:"architecture"`
		OperatingSystems []string            `json:"operatingSystems"`
		Resources        corev1.ResourceList `json:"resources"`
	}
	offeringJSON struct {
		Price        float64                          `json:"Price"`
		Available    bool                             `json:"Available"`
		Requirements []corev1.NodeSelectorRequirement `json:"Requirements"`
	}
)

func instanceTypesFile(types []InstanceType) []instanceTypeJSON {
	var out []instanceTypeJSON
	for _, it := range types {
		arch, zones, capacityTypes, price := it.Arch, it.Zones, it.CapacityTypes, it.Price
		if arch == "" {
			arch = "amd64"
		}
		if len(zones) == 0 {
			zones = []string{DefaultZone}
		}
		if len(capacityTypes) == 0 {
			capacityTypes = []string{OnDemand}
		}
		if price == 0 {
			price = 1
		}
		pods := it.Pods
		if pods == 0 {
			pods = 110
		}
		j := instanceTypeJSON{Name: it.Name, Architecture: arch, OperatingSystems: []string{"linux"},
			Resources: corev1.ResourceList{corev1.ResourceCPU: it.CPU, corev1.ResourceMemory: it.Memory,
				corev1.ResourcePods: resource.MustParse(strconv.Itoa(pods))}}
		for _, ct := range capacityTypes {
			for _, z := range zones {
				j.Offerings = append(j.Offerings, offeringJSON{Price: price, Available: true, Requirements: []corev1.NodeSelectorRequirement{
					{Key: CapacityTypeLabel, Operator: corev1.NodeSelectorOpIn, Values: []string{ct}},
					{Key: corev1.LabelTopologyZone, Operator: corev1.NodeSelectorOpIn, Values: []string{z}},
				}})
			}
		}
		out = append(out, j)
	}
	return out
}

// NodeClass is a KWOKNodeClass: Karpenter's KWOK provider creates a NodeClaim's Node
// registrationDelay after it launches it.
func NodeClass(name string, registrationDelay time.Duration) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": KWOKNodeClasses.GroupVersion().String(),
		"kind":       "KWOKNodeClass",
		"metadata":   map[string]any{"name": name},
		"spec":       map[string]any{},
	}}
	if registrationDelay > 0 {
		_ = unstructured.SetNestedField(u.Object, seconds(registrationDelay), "spec", "nodeRegistrationDelay")
	}
	return u
}

// NodePool is the part of a Karpenter NodePool that the simulator sets.
type NodePool struct {
	Name string
	// NodeClass is the KWOKNodeClass its nodes use; empty: DefaultNodeClass.
	NodeClass string
	// Labels go on every node it launches (from the Node's CREATE on).
	Labels map[string]string
	// StartupTaints are taints Karpenter expects on a new node and ignores when it simulates
	// where pending Pods fit; it also writes them onto the Node when it registers it.
	StartupTaints []corev1.Taint
	// Taints are permanent taints of its nodes.
	Taints []corev1.Taint
	// Arch, OS and CapacityType are its requirements; empty: amd64, linux, on-demand.
	Arch, OS, CapacityType string
	// ConsolidationPolicy is WhenEmpty or WhenEmptyOrUnderutilized; empty: the latter,
	// Karpenter's default.
	ConsolidationPolicy string
	// ConsolidateAfter is how long a node must be consolidatable before Karpenter acts;
	// nil: never.
	ConsolidateAfter *time.Duration
}

// The NodePool as Karpenter's karpenter.sh/v1 API spells it.
type (
	nodePoolJSON struct {
		APIVersion string       `json:"apiVersion"`
		Kind       string       `json:"kind"`
		Metadata   metadataJSON `json:"metadata"`
		Spec       struct {
			Template struct {
				Metadata struct {
					Labels map[string]string `json:"labels,omitempty"`
				} `json:"metadata"`
				Spec struct {
					NodeClassRef  nodeClassRefJSON                 `json:"nodeClassRef"`
					Requirements  []corev1.NodeSelectorRequirement `json:"requirements"`
					StartupTaints []corev1.Taint                   `json:"startupTaints,omitempty"`
					Taints        []corev1.Taint                   `json:"taints,omitempty"`
				} `json:"spec"`
			} `json:"template"`
			Disruption struct {
				ConsolidationPolicy string `json:"consolidationPolicy"`
				ConsolidateAfter    string `json:"consolidateAfter"`
			} `json:"disruption"`
		} `json:"spec"`
	}
	metadataJSON struct {
		Name string `json:"name"`
	}
	nodeClassRefJSON struct {
		Group string `json:"group"`
		Kind  string `json:"kind"`
		Name  string `json:"name"`
	}
)

// Object is the NodePool to create.
func (p NodePool) Object() (*unstructured.Unstructured, error) {
	or := func(s, def string) string {
		if s == "" {
			return def
		}
		return s
	}
	var j nodePoolJSON
	j.APIVersion, j.Kind, j.Metadata.Name = NodePools.GroupVersion().String(), "NodePool", p.Name
	t := &j.Spec.Template
	t.Metadata.Labels = p.Labels
	t.Spec.NodeClassRef = nodeClassRefJSON{Group: KWOKNodeClasses.Group, Kind: "KWOKNodeClass", Name: or(p.NodeClass, DefaultNodeClass)}
	t.Spec.Requirements = []corev1.NodeSelectorRequirement{
		{Key: corev1.LabelArchStable, Operator: corev1.NodeSelectorOpIn, Values: []string{or(p.Arch, "amd64")}},
		{Key: corev1.LabelOSStable, Operator: corev1.NodeSelectorOpIn, Values: []string{or(p.OS, "linux")}},
		{Key: CapacityTypeLabel, Operator: corev1.NodeSelectorOpIn, Values: []string{or(p.CapacityType, OnDemand)}},
	}
	t.Spec.StartupTaints, t.Spec.Taints = p.StartupTaints, p.Taints
	j.Spec.Disruption.ConsolidationPolicy = or(p.ConsolidationPolicy, "WhenEmptyOrUnderutilized")
	j.Spec.Disruption.ConsolidateAfter = "Never"
	if p.ConsolidateAfter != nil {
		j.Spec.Disruption.ConsolidateAfter = seconds(*p.ConsolidateAfter)
	}
	raw, err := json.Marshal(j)
	if err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(raw); err != nil {
		return nil, fmt.Errorf("building NodePool %s: %w", p.Name, err)
	}
	return u, nil
}

// seconds spells d in whole seconds, the only form Karpenter's duration fields all accept.
func seconds(d time.Duration) string {
	return fmt.Sprintf("%ds", int64(d/time.Second))
}
