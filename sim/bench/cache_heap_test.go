package bench

import (
	"fmt"
	"runtime"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	"github.com/startupgate/startupgate/gate/config"
	"github.com/startupgate/startupgate/gate/setup"
	"github.com/startupgate/startupgate/sim/kubelet"
)

// BenchmarkGateCacheHeap reports the heap one cached Node and its init Pod take in the
// gate, without a plane: cloud-sized Nodes (the default profile) and init Pods as the
// large phase registers them, encoded as the apiserver sends them to the gate (protobuf),
// decoded and put through the gate's own cache transforms. The large phase measures the
// whole gate on a plane; this isolates the cache's share, in seconds rather than an hour,
// so that a change to a transform can be weighed before and after.
//
//	go test ./sim/bench -run '^$' -bench GateCacheHeap -benchtime 3x
func BenchmarkGateCacheHeap(b *testing.B) {
	cfg := config.DefaultConfig()
	if err := cfg.Validate(); err != nil {
		b.Fatal(err)
	}
	var nodeT, podT cache.TransformFunc
	for obj, bo := range setup.CacheOptions(&cfg, setup.Options{}).ByObject {
		switch obj.(type) {
		case *corev1.Node:
			nodeT = bo.Transform
		case *corev1.Pod:
			podT = bo.Transform
		}
	}
	if nodeT == nil || podT == nil {
		b.Fatal("the gate's cache has no Node or Pod transform")
	}
	const n = 5000
	profile := kubelet.DefaultProfile()
	nodes, pods := make([][]byte, n), make([][]byte, n)
	for i := range n {
		name := staticName(i)
		node := profile.Apply(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID(fmt.Sprintf("uid-%06d", i)),
			Labels: map[string]string{"kubernetes.io/hostname": name, "sim.startupgate.io/scenario": staticScenario}}})
		pod := staticInitPod(name)
		readyPod(pod)
		var err error
		if nodes[i], err = node.Marshal(); err != nil {
			b.Fatal(err)
		}
		if pods[i], err = pod.Marshal(); err != nil {
			b.Fatal(err)
		}
	}
	for b.Loop() {
		kept := make([]any, 0, 2*n)
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		for i := range n {
			node, pod := &corev1.Node{}, &corev1.Pod{}
			if err := node.Unmarshal(nodes[i]); err != nil {
				b.Fatal(err)
			}
			if err := pod.Unmarshal(pods[i]); err != nil {
				b.Fatal(err)
			}
			tn, err := nodeT(node)
			if err != nil {
				b.Fatal(err)
			}
			tp, err := podT(pod)
			if err != nil {
				b.Fatal(err)
			}
			kept = append(kept, tn, tp)
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(int64(after.HeapAlloc)-int64(before.HeapAlloc))/n, "heap-B/node")
		runtime.KeepAlive(kept)
	}
}

// readyPod gives an init Pod the status the fake kubelet writes: Running, Ready, its
// container started.
func readyPod(p *corev1.Pod) {
	now := metav1.Now()
	p.Status.Phase = corev1.PodRunning
	p.Status.StartTime = &now
	p.Status.PodIP, p.Status.HostIP = "10.244.0.1", "10.0.0.1"
	for _, t := range []corev1.PodConditionType{corev1.PodReady, corev1.ContainersReady, corev1.PodInitialized, corev1.PodScheduled} {
		p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: t, Status: corev1.ConditionTrue, LastTransitionTime: now})
	}
	for _, c := range p.Spec.Containers {
		p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, corev1.ContainerStatus{Name: c.Name, Image: c.Image, Ready: true,
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}}})
	}
}
