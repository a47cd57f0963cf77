package sim

import (
	"context"
	"os"
	"strconv"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/startupgate/startupgate/gate/config"
	"github.com/startupgate/startupgate/sim/gateundertest"
	"github.com/startupgate/startupgate/sim/node"
	"github.com/startupgate/startupgate/sim/scenario"
)

// TestRealNodeJoin: a real kubelet registers its Node through the gate's webhook, which
// taints it at CREATE; the example init DaemonSet (deploy/startup-daemonset.yaml, its image
// replaced by the node's busybox image, as nothing can be pulled here) runs on it as a real
// container until its readiness probe passes; the gate releases the node; and a workload
// Pod that waited for it only then starts there. Then the kubelet restarts: the node keeps
// its boot ID, its release and its workload, and the gate, which gates reboots here, does
// not take the restart for one. This package's real nodes use indexes 10 to 19.
func TestRealNodeJoin(t *testing.T) {
	if why := node.Unsupported(); why != "" {
		t.Skip(why)
	}
	const name = "real-node-join"
	ctx := context.Background()
	rc := sharedPlane(t)
	cs := kubernetes.NewForConfigOrDie(rc)
	cfg, err := config.LoadConfig([]byte(realNodeConfig))
	if err != nil {
		t.Fatal(err)
	}
	cfg = scenario.ScopeConfig(cfg, name)
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	r := cfg.EffectiveRules()[0]
	g := gateundertest.New(rc, cs, gateundertest.InProcess, cfg, &scenario.Scenario{Name: name}, name, gateundertest.Options{Run: name})
	t.Cleanup(func() { _ = g.Stop(context.Background()) })
	if err := g.Start(ctx, 1); err != nil {
		t.Fatal(err)
	}
	installInitDaemonSet(t, rc, name)

	n, err := node.Start(ctx, node.Config{Name: name, Index: 10, Dir: t.TempDir(), Kubeconfig: plane.Kubeconfig(),
		Labels: map[string]string{scenario.Label: name}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := n.Stop(); err != nil {
			t.Error(err)
		}
		_ = cs.CoreV1().Nodes().Delete(context.Background(), name, metav1.DeleteOptions{})
	})
	first := waitNode(t, cs, n, func(*corev1.Node) bool { return true })
	if !r.HasTaint(first) {
		t.Fatalf("the kubelet's Node %s was registered without the startup taint: %v", name, first.Spec.Taints)
	}
	workload := startWaitingPod(t, cs, name)

	released := waitNode(t, cs, n, r.Completed)
	if r.HasTaint(released) {
		t.Errorf("node %s carries completedAt and still the taint: %v", name, released.Spec.Taints)
	}
	completed, err := strconv.ParseInt(released.Annotations[r.CompletedAnnotation], 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	pod := waitPod(t, cs, name, workload, func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodRunning })
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.LastTransitionTime.Unix() < completed {
			t.Errorf("workload Pod scheduled at %v, before the node's release at %v", c.LastTransitionTime.Time, time.Unix(completed, 0))
		}
	}
	t.Logf("node %s: created %v, released %v (%ds later); workload Pod running in %s",
		name, first.CreationTimestamp.Time, time.Unix(completed, 0), completed-first.CreationTimestamp.Unix(), pod.Status.ContainerStatuses[0].ContainerID)

	restartKubelet(t, cs, n, released, pod)
	after := waitNode(t, cs, n, func(*corev1.Node) bool { return true })
	switch {
	case after.Annotations[r.CompletedAnnotation] != released.Annotations[r.CompletedAnnotation]:
		t.Errorf("completedAt %q after the kubelet's restart, %q before", after.Annotations[r.CompletedAnnotation], released.Annotations[r.CompletedAnnotation])
	case r.HasTaint(after):
		t.Errorf("the gate tainted node %s again after its kubelet restarted: %v", name, after.Spec.Taints)
	}
}

// realNodeConfig gates reboots, so that a gate that took a kubelet restart for a reboot
// would taint the node again.
const realNodeConfig = `rules:
  - name: default
    taint: {key: ` + config.DefaultTaintKey + `, value: ` + config.DefaultTaintValue + `, effect: NoSchedule}
    components: [{name: init, selector: ` + config.DefaultInitLabel + `}]
    onReboot: gate
`

// restartKubelet restarts the node's kubelet and waits until the new one has reported the
// node Ready. A kubelet restart is no reboot: the boot ID must stay, and the workload's
// container must be the same one, not restarted.
func restartKubelet(t *testing.T, cs kubernetes.Interface, n *node.Node, before *corev1.Node, pod *corev1.Pod) {
	t.Helper()
	at := metav1.NewTime(time.Now().Truncate(time.Second)) // heartbeats have whole seconds
	if err := n.RestartKubelet(); err != nil {
		t.Fatal(err)
	}
	var beat metav1.Time
	back := waitNode(t, cs, n, func(nd *corev1.Node) bool {
		for _, c := range nd.Status.Conditions {
			if c.Type == corev1.NodeReady {
				beat = c.LastHeartbeatTime
				return c.Status == corev1.ConditionTrue && !beat.Before(&at)
			}
		}
		return false
	})
	if back.Status.NodeInfo.BootID != before.Status.NodeInfo.BootID {
		t.Errorf("boot ID %q after the kubelet's restart, %q before", back.Status.NodeInfo.BootID, before.Status.NodeInfo.BootID)
	}
	p, err := cs.CoreV1().Pods(pod.Namespace).Get(context.Background(), pod.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	was, now := pod.Status.ContainerStatuses[0], p.Status.ContainerStatuses[0]
	if p.Status.Phase != corev1.PodRunning || now.ContainerID != was.ContainerID || now.RestartCount != 0 {
		t.Errorf("workload Pod %s, container %s (restarts %d) after the kubelet's restart; container %s before",
			p.Status.Phase, now.ContainerID, now.RestartCount, was.ContainerID)
	}
	t.Logf("kubelet of node %s restarted: Ready again by %s, boot ID %s kept", n.Name(), beat.Sub(at.Time), back.Status.NodeInfo.BootID)
}

// installInitDaemonSet applies deploy/startup-daemonset.yaml to namespace ns, as a real node
// here runs it (node.ExampleInit) with a warm-up of 3 s, limited to this test's node.
func installInitDaemonSet(t *testing.T, rc *rest.Config, ns string) {
	t.Helper()
	ctx := context.Background()
	raw, err := os.ReadFile("../deploy/startup-daemonset.yaml")
	if err != nil {
		t.Fatal(err)
	}
	objs, err := node.ExampleInit(raw, "3")
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(rc, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Delete(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}) })
	for _, o := range objs {
		o.SetNamespace(ns)
		switch o := o.(type) {
		case *rbacv1.RoleBinding:
			o.Subjects[0].Namespace = ns
		case *appsv1.DaemonSet:
			o.Spec.Template.Spec.NodeSelector = map[string]string{scenario.Label: ns}
		}
		if err := c.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
}

// startWaitingPod creates a workload Pod for the test's node, which it can only land on
// once the gate releases it.
func startWaitingPod(t *testing.T, cs kubernetes.Interface, ns string) string {
	t.Helper()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "workload", Namespace: ns},
		Spec: corev1.PodSpec{
			NodeSelector:                  map[string]string{scenario.Label: ns},
			TerminationGracePeriodSeconds: ptr.To[int64](1),
			Containers: []corev1.Container{{
				Name: "work", Image: node.ToolsImage, ImagePullPolicy: corev1.PullNever,
				Command: []string{"/bin/sleep", "3600"},
			}},
		},
	}
	if _, err := cs.CoreV1().Pods(ns).Create(context.Background(), pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return pod.Name
}

// waitNode waits for the real node's Node to exist and satisfy ok (node.Node.Wait).
func waitNode(t *testing.T, cs kubernetes.Interface, n *node.Node, ok func(*corev1.Node) bool) *corev1.Node {
	t.Helper()
	got, err := n.Wait(context.Background(), cs, ok)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// waitPod waits for Pod ns/name to satisfy ok.
func waitPod(t *testing.T, cs kubernetes.Interface, ns, name string, ok func(*corev1.Pod) bool) *corev1.Pod {
	t.Helper()
	var got *corev1.Pod
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		p, err := cs.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		got = p
		return ok(p), nil
	})
	if err != nil {
		t.Fatalf("pod %s/%s: %v (status %+v)", ns, name, err, got.Status)
	}
	return got
}
