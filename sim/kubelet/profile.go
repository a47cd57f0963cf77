package kubelet

import (
	"fmt"
	"hash/fnv"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// NodeProfile is the size and shape of the Nodes a kubelet registers, so that a benchmark
// can fill a plane with Nodes as large as a cloud's. The fake kubelet's own Nodes are
// small (a few labels, no images); a cloud node carries dozens of labels, a dozen
// annotations, the images its kubelet lists, addresses and a full capacity, about 10–20 KB.
//
// The content is synthetic and derived from the node's name (zone, instance type,
// addresses), so that the same name always gives the same object. The default takes its
// shape, not its values, from a Karpenter-provisioned EKS node with the EBS CSI driver and
// a node problem detector, as the upstream documents describe them: the well-known labels
// of k8s.io/api/core/v1 (well_known_labels.go), Karpenter's and the provider's labels
// (karpenter.sh/…, karpenter.k8s.aws/instance-…), the CSI driver's node-ID annotation,
// and the kubelet's image list, which it caps at nodeStatusMaxImages (50 by default).
type NodeProfile struct {
	// Labels is how many labels a node carries in all, the kubelet's own included.
	Labels int `json:"labels"`
	// Annotations is how many annotations a node carries.
	Annotations int `json:"annotations"`
	// Images is how many entries status.images lists, each under a digest and a tag.
	Images int `json:"images"`
	// ProblemConditions is how many node-problem-detector conditions (all False) the
	// node reports beside the kubelet's five.
	ProblemConditions int `json:"problem_conditions"`
	// Ready registers the node with its conditions already reported (Ready=True), as a
	// kubelet's first status does; without it the node waits for its Ready report.
	Ready bool `json:"ready"`
}

// DefaultProfile is a cloud node of typical size: see NodeProfile.
func DefaultProfile() NodeProfile {
	return NodeProfile{Labels: 44, Annotations: 12, Images: 50, ProblemConditions: 6, Ready: true}
}

// Apply shapes node, which holds the name and the kubelet's own labels, taints and
// annotations, to the profile: it adds labels and annotations up to the profile's counts
// (never replacing one the node has) and fills the status a kubelet reports. It returns
// node.
func (p NodeProfile) Apply(node *corev1.Node) *corev1.Node {
	s := shapeOf(node.Name)
	if node.Labels == nil {
		node.Labels = map[string]string{}
	}
	fill(node.Labels, p.Labels, s.labels())
	if node.Annotations == nil && p.Annotations > 0 {
		node.Annotations = map[string]string{}
	}
	fill(node.Annotations, p.Annotations, s.annotations())
	node.Spec.ProviderID = s.providerID()
	node.Spec.PodCIDR = s.podCIDR()
	node.Spec.PodCIDRs = []string{s.podCIDR()}
	st := &node.Status
	st.Capacity = s.capacity()
	st.Allocatable = s.allocatable()
	st.Addresses = s.addresses()
	st.DaemonEndpoints = corev1.NodeDaemonEndpoints{KubeletEndpoint: corev1.DaemonEndpoint{Port: 10250}}
	st.NodeInfo = s.nodeInfo(st.NodeInfo)
	st.Images = s.images(p.Images)
	if p.Ready {
		st.Phase = corev1.NodeRunning
		st.Conditions = s.conditions(p.ProblemConditions, metav1.Now())
	}
	return node
}

// fill adds keys of from to m, in order, until m has n keys; it never replaces a key.
func fill(m map[string]string, n int, from []kv) {
	for _, e := range from {
		if len(m) >= n {
			return
		}
		if _, ok := m[e.k]; !ok {
			m[e.k] = e.v
		}
	}
	for i := 0; len(m) < n; i++ {
		k := fmt.Sprintf("example.com/extra-%d", i)
		if _, ok := m[k]; !ok {
			m[k] = "value-" + strconv.Itoa(i)
		}
	}
}

type kv struct{ k, v string }

// shape is what a node's synthetic content derives from its name.
type shape struct {
	name   string
	h      uint64
	zone   string
	itype  string
	family string
	size   string
	cpu    int
	memGi  int
	ip     [4]int
}

var (
	zones     = []string{"a", "b", "c"}
	families  = []string{"m6i", "c6i", "r6i", "m7g"}
	sizes     = []string{"large", "xlarge", "2xlarge", "4xlarge"}
	sizeCPUs  = []int{2, 4, 8, 16}
	familyMem = map[string]int{"m6i": 4, "c6i": 2, "r6i": 8, "m7g": 4}
)

func shapeOf(name string) shape {
	f := fnv.New64a()
	_, _ = f.Write([]byte(name))
	h := f.Sum64()
	s := shape{name: name, h: h, zone: "us-east-1" + zones[h%3]}
	s.family, s.size = families[(h>>8)%4], sizes[(h>>16)%4]
	s.itype = s.family + "." + s.size
	s.cpu = sizeCPUs[(h>>16)%4]
	s.memGi = s.cpu * familyMem[s.family]
	s.ip = [4]int{10, int(h>>24) % 256, int(h>>32) % 256, int(h>>40)%254 + 1}
	return s
}

func (s shape) ipString() string {
	return fmt.Sprintf("%d.%d.%d.%d", s.ip[0], s.ip[1], s.ip[2], s.ip[3])
}
func (s shape) dns() string {
	return fmt.Sprintf("ip-%d-%d-%d-%d.ec2.internal", s.ip[0], s.ip[1], s.ip[2], s.ip[3])
}
func (s shape) instanceID() string { return fmt.Sprintf("i-%017x", s.h&0xfffffffffffffff) }
func (s shape) providerID() string { return "aws:///" + s.zone + "/" + s.instanceID() }
func (s shape) podCIDR() string    { return fmt.Sprintf("10.%d.%d.0/24", 100+s.ip[1]%100, s.ip[2]) }

// labels are those of a Karpenter-provisioned cloud node, in the order a profile takes them.
func (s shape) labels() []kv {
	region := s.zone[:len(s.zone)-1]
	arch := "amd64"
	if s.family == "m7g" {
		arch = "arm64"
	}
	cpu, mem := strconv.Itoa(s.cpu), strconv.Itoa(s.memGi*1024)
	return []kv{
		{"kubernetes.io/arch", arch}, {"kubernetes.io/os", "linux"}, {"kubernetes.io/hostname", s.name},
		{"beta.kubernetes.io/arch", arch}, {"beta.kubernetes.io/os", "linux"},
		{"beta.kubernetes.io/instance-type", s.itype}, {"node.kubernetes.io/instance-type", s.itype},
		{"topology.kubernetes.io/region", region}, {"topology.kubernetes.io/zone", s.zone},
		{"failure-domain.beta.kubernetes.io/region", region}, {"failure-domain.beta.kubernetes.io/zone", s.zone},
		{"topology.k8s.aws/zone-id", "use1-az" + strconv.Itoa(int(s.h%6)+1)},
		{"topology.ebs.csi.aws.com/zone", s.zone},
		{"karpenter.sh/nodepool", "general-purpose"}, {"karpenter.sh/capacity-type", []string{"on-demand", "spot"}[s.h%2]},
		{"karpenter.sh/initialized", "true"}, {"karpenter.sh/registered", "true"},
		{"karpenter.k8s.aws/ec2nodeclass", "default"},
		{"karpenter.k8s.aws/instance-category", s.family[:1]}, {"karpenter.k8s.aws/instance-family", s.family},
		{"karpenter.k8s.aws/instance-generation", s.family[1:2]}, {"karpenter.k8s.aws/instance-size", s.size},
		{"karpenter.k8s.aws/instance-cpu", cpu}, {"karpenter.k8s.aws/instance-cpu-manufacturer", "intel"},
		{"karpenter.k8s.aws/instance-memory", mem}, {"karpenter.k8s.aws/instance-network-bandwidth", "12500"},
		{"karpenter.k8s.aws/instance-ebs-bandwidth", "10000"}, {"karpenter.k8s.aws/instance-encryption-in-transit-supported", "true"},
		{"karpenter.k8s.aws/instance-hypervisor", "nitro"}, {"karpenter.k8s.aws/instance-capability-flex", "false"},
		{"k8s.io/cloud-provider-aws", "2b1c4e8f0a9d7c6e5f4a3b2c1d0e9f8a"},
		{"node.kubernetes.io/lifecycle", "normal"}, {"eks.amazonaws.com/compute-type", "ec2"},
		{"team.example.com/cost-center", "cc-" + strconv.Itoa(int(s.h%40))}, {"team.example.com/owner", "platform"},
		{"team.example.com/environment", "production"}, {"app.example.com/pool", "general"},
		{"node-role.kubernetes.io/worker", ""}, {"feature.node.kubernetes.io/cpu-model.vendor_id", "Intel"},
		{"feature.node.kubernetes.io/kernel-version.major", "6"}, {"feature.node.kubernetes.io/kernel-version.minor", "1"},
		{"feature.node.kubernetes.io/system-os_release.ID", "amzn"},
		{"feature.node.kubernetes.io/system-os_release.VERSION_ID", "2023"},
		{"feature.node.kubernetes.io/pci-1d0f.present", "true"},
	}
}

// annotations are those a cloud node's kubelet, CSI driver, autoscaler and CNI write.
func (s shape) annotations() []kv {
	return []kv{
		{"alpha.kubernetes.io/provided-node-ip", s.ipString()},
		{"node.alpha.kubernetes.io/ttl", "0"},
		{"volumes.kubernetes.io/controller-managed-attach-detach", "true"},
		{"csi.volume.kubernetes.io/nodeid", fmt.Sprintf(`{"ebs.csi.aws.com":%q,"efs.csi.aws.com":%q}`, s.instanceID(), s.instanceID())},
		{"karpenter.sh/nodepool-hash", strconv.FormatUint(s.h>>1, 10)},
		{"karpenter.sh/nodepool-hash-version", "v3"},
		{"karpenter.k8s.aws/ec2nodeclass-hash", strconv.FormatUint(s.h>>2, 10)},
		{"karpenter.k8s.aws/ec2nodeclass-hash-version", "v4"},
		{"nfd.node.kubernetes.io/feature-labels", "cpu-model.vendor_id,kernel-version.major,kernel-version.minor,pci-1d0f.present,system-os_release.ID,system-os_release.VERSION_ID"},
		{"nfd.node.kubernetes.io/extended-resources", ""},
		{"projectcalico.org/IPv4Address", s.ipString() + "/19"},
		{"projectcalico.org/IPv4VXLANTunnelAddr", fmt.Sprintf("172.16.%d.%d", s.ip[2], s.ip[3])},
	}
}

func (s shape) capacity() corev1.ResourceList {
	return corev1.ResourceList{
		corev1.ResourceCPU:              *resource.NewQuantity(int64(s.cpu), resource.DecimalSI),
		corev1.ResourceMemory:           *resource.NewQuantity(int64(s.memGi)<<30, resource.BinarySI),
		corev1.ResourcePods:             *resource.NewQuantity(110, resource.DecimalSI),
		corev1.ResourceEphemeralStorage: resource.MustParse("104845292Ki"),
		"hugepages-1Gi":                 resource.MustParse("0"),
		"hugepages-2Mi":                 resource.MustParse("0"),
		"attachable-volumes-aws-ebs":    resource.MustParse("25"),
	}
}

func (s shape) allocatable() corev1.ResourceList {
	a := s.capacity()
	a[corev1.ResourceCPU] = *resource.NewMilliQuantity(int64(s.cpu)*1000-90, resource.DecimalSI)
	a[corev1.ResourceMemory] = *resource.NewQuantity(int64(s.memGi)<<30-1<<30, resource.BinarySI)
	a[corev1.ResourceEphemeralStorage] = resource.MustParse("95551679124")
	return a
}

func (s shape) addresses() []corev1.NodeAddress {
	return []corev1.NodeAddress{
		{Type: corev1.NodeInternalIP, Address: s.ipString()},
		{Type: corev1.NodeInternalDNS, Address: s.dns()},
		{Type: corev1.NodeHostName, Address: s.dns()},
	}
}

// nodeInfo keeps what the kubelet already set (its version, the boot ID).
func (s shape) nodeInfo(have corev1.NodeSystemInfo) corev1.NodeSystemInfo {
	arch := "amd64"
	if s.family == "m7g" {
		arch = "arm64"
	}
	ni := corev1.NodeSystemInfo{
		MachineID: fmt.Sprintf("ec2%029x", s.h), SystemUUID: fmt.Sprintf("ec2%05x-%04x-%04x-%04x-%012x", s.h&0xfffff, s.h>>20&0xffff, s.h>>36&0xffff, s.h>>52, s.h&0xffffffffffff),
		BootID: have.BootID, KernelVersion: "6.1.112-122.189.amzn2023." + map[string]string{"amd64": "x86_64", "arm64": "aarch64"}[arch],
		OSImage: "Amazon Linux 2023.6.20241010", ContainerRuntimeVersion: "containerd://1.7.22",
		KubeletVersion: have.KubeletVersion, OperatingSystem: "linux", Architecture: arch,
	}
	if ni.BootID == "" {
		ni.BootID = fmt.Sprintf("%08x-%04x-%04x-%04x-%012x", s.h>>32, s.h>>16&0xffff, s.h&0xffff, s.h>>48, s.h>>8&0xffffffffffff)
	}
	return ni
}

// images lists n images as a kubelet does: largest first, each by digest and by tag.
func (s shape) images(n int) []corev1.ContainerImage {
	repos := []string{
		"602401143452.dkr.ecr.us-east-1.amazonaws.com/amazon-k8s-cni", "602401143452.dkr.ecr.us-east-1.amazonaws.com/eks/kube-proxy",
		"public.ecr.aws/ebs-csi-driver/aws-ebs-csi-driver", "registry.k8s.io/sig-storage/csi-node-driver-registrar",
		"docker.io/calico/node", "quay.io/prometheus/node-exporter", "registry.k8s.io/nfd/node-feature-discovery",
		"public.ecr.aws/aws-observability/aws-for-fluent-bit", "registry.example.com/platform/log-shipper",
		"registry.example.com/apps/checkout", "registry.example.com/apps/catalog", "registry.example.com/apps/payments",
		"registry.example.com/apps/search", "registry.example.com/apps/recommendations", "registry.example.com/ml/feature-store",
		"docker.io/library/nginx", "docker.io/library/redis", "docker.io/library/python", "gcr.io/distroless/static-debian12",
		"registry.k8s.io/pause",
	}
	out := make([]corev1.ContainerImage, 0, n)
	for i := range n {
		repo := repos[i%len(repos)]
		if i >= len(repos) {
			repo += "-v" + strconv.Itoa(i/len(repos))
		}
		h := fnv.New64a()
		fmt.Fprintf(h, "%s\x00%d", repo, i)
		d := h.Sum64()
		out = append(out, corev1.ContainerImage{
			Names: []string{
				fmt.Sprintf("%s@sha256:%016x%016x%016x%016x", repo, d, d^0x9e3779b97f4a7c15, d*31, d^s.h&0xff),
				fmt.Sprintf("%s:v1.%d.%d", repo, i%30, d%10),
			},
			SizeBytes: int64(900_000_000 - i*15_000_000),
		})
	}
	return out
}

// conditions are the kubelet's five, Ready, and problems of a node problem detector, none
// of them present.
func (s shape) conditions(problems int, now metav1.Time) []corev1.NodeCondition {
	c := []corev1.NodeCondition{
		{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse, Reason: "KubeletHasSufficientMemory", Message: "kubelet has sufficient memory available"},
		{Type: corev1.NodeDiskPressure, Status: corev1.ConditionFalse, Reason: "KubeletHasNoDiskPressure", Message: "kubelet has no disk pressure"},
		{Type: corev1.NodePIDPressure, Status: corev1.ConditionFalse, Reason: "KubeletHasSufficientPID", Message: "kubelet has sufficient PID available"},
		{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady", Message: "kubelet is posting ready status"},
	}
	npd := []struct{ t, reason, msg string }{
		{"KernelDeadlock", "KernelHasNoDeadlock", "kernel has no deadlock"},
		{"ReadonlyFilesystem", "FilesystemIsNotReadOnly", "Filesystem is not read-only"},
		{"FrequentKubeletRestart", "NoFrequentKubeletRestart", "kubelet is functioning properly"},
		{"FrequentContainerdRestart", "NoFrequentContainerdRestart", "containerd is functioning properly"},
		{"CorruptDockerOverlay2", "NoCorruptDockerOverlay2", "docker overlay2 is functioning properly"},
		{"FrequentUnregisterNetDevice", "NoFrequentUnregisterNetDevice", "node is functioning properly"},
	}
	for i := 0; i < problems; i++ {
		p := npd[i%len(npd)]
		t := p.t
		if i >= len(npd) {
			t += strconv.Itoa(i / len(npd))
		}
		c = append(c, corev1.NodeCondition{Type: corev1.NodeConditionType(t), Status: corev1.ConditionFalse, Reason: p.reason, Message: p.msg})
	}
	for i := range c {
		c[i].LastHeartbeatTime, c[i].LastTransitionTime = now, now
	}
	return c
}
