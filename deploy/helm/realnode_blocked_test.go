package helm_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/startupgate/startupgate/gate"
	"github.com/startupgate/startupgate/sim/gateundertest"
	"github.com/startupgate/startupgate/sim/node"
)

// blockedNode is what an operator meets when a node carries a taint its init DaemonSet does
// not tolerate (a GPU pool's): the node registers through the gate's webhook with
// nvidia.com/gpu, and a copy of the example init DaemonSet that targets it tolerates only
// the gate's taint, as many do. Then, run as an operator runs them from a workstation:
//   - `gate preflight --config` with GKE's exclude file on this EKS-like cluster names the
//     DaemonSet and the taint, and the exclude that matches no node, and exits 1;
//   - `gate status NODE` says the node is held and why;
//   - the troubleshooting page's first commands, as written, show the gate's Warning on the
//     node and the leader's log lines about it.
func (c *cluster) blockedNode(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	const name, taint = "gpu-0", "nvidia.com/gpu"
	ds := c.initObjects(t, name).daemonSet
	// The example tolerates every NoSchedule taint; many an init DaemonSet tolerates only
	// the gate's.
	ds.Name += "-gpu"
	ds.Spec.Template.Spec.Tolerations = []corev1.Toleration{{Key: defaultRule().Taint.Key, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}}
	if err := c.client(t).Create(ctx, ds); err != nil {
		t.Fatal(err)
	}
	n := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{corev1.LabelHostname: name}},
		Spec:       corev1.NodeSpec{Taints: []corev1.Taint{{Key: taint, Value: "present", Effect: corev1.TaintEffectNoSchedule}}},
	}
	if _, err := c.cs.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = c.cs.CoreV1().Nodes().Delete(ctx, name, metav1.DeleteOptions{})
		_ = c.client(t).Delete(ctx, ds)
	})
	c.waitEvent(t, name, gate.ReasonComponentBlocked)

	out, err := c.gateCLI(t, "preflight", "--config", "../examples/exclude/gke.yaml")
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Errorf("gate preflight with problems to find: %v, want exit status 1", err)
	}
	for _, want := range []string{
		"PROBLEM  exclude[0] cloud.google.com/gke-nodepool in (system-pool) matches no node",
		"PROBLEM  no Ready node matches exclude",
		"PROBLEM  rule default: component init: daemonset " + ds.Namespace + "/" + ds.Name + " does not tolerate taint " + taint + "=present:NoSchedule on 1 node(s): " + name,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("gate preflight does not say %q:\n%s", want, out)
		}
	}
	t.Logf("gate preflight --config ../examples/exclude/gke.yaml:\n%s", out)

	out, err = c.gateCLI(t, "status", name)
	if err != nil {
		t.Fatalf("gate status %s: %v\n%s", name, err, out)
	}
	if !regexp.MustCompile(name + `\s+default\s+held\s+.*component "init" cannot land on the node: .*` + regexp.QuoteMeta(taint)).MatchString(out) {
		t.Errorf("gate status %s does not say the node is held for the untolerated taint:\n%s", name, out)
	}
	t.Logf("gate status %s:\n%s", name, out)

	out = c.troubleshoot(t, name)
	for _, want := range []string{gate.ReasonComponentBlocked, `"msg":"Component cannot land on the node"`} {
		if !strings.Contains(out, want) {
			t.Errorf("the troubleshooting page's commands for %s do not show %q:\n%s", name, want, out)
		}
	}
	t.Logf("the troubleshooting page's commands for %s:\n%s", name, out)
}

// waitEvent waits for an Event of the reason on the node.
func (c *cluster) waitEvent(t *testing.T, nodeName, reason string) {
	t.Helper()
	sel := fields.Set{"involvedObject.name": nodeName, "reason": reason}.String()
	if err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		evs, err := c.cs.CoreV1().Events("").List(ctx, metav1.ListOptions{FieldSelector: sel})
		return err == nil && len(evs.Items) > 0, nil
	}); err != nil {
		out, _ := c.gateCLI(t, "status", nodeName)
		c.logGateLogs(t)
		t.Fatalf("no %s event on node %s: %v; gate status %s:\n%s", reason, nodeName, err, nodeName, out)
	}
}

// gateCLI runs the gate's binary as an operator does from a workstation, against this
// cluster's kubeconfig and the chart's namespace, and returns what it printed.
func (c *cluster) gateCLI(t *testing.T, args ...string) (string, error) {
	t.Helper()
	bin, err := gateundertest.GateBinary()
	if err != nil {
		t.Fatal(err)
	}
	args = append(args, "--kubeconfig", c.plane.Kubeconfig(), "--gate-namespace", namespace)
	out, err := exec.Command(bin, args...).CombinedOutput()
	return string(out), err
}

// troubleshootingBlock is the first shell block of docs/operations.md's Troubleshooting
// section: the commands an operator starts with.
var troubleshootingBlock = regexp.MustCompile("(?s)\n## Troubleshooting\n.*?```sh\n(.*?)```")

// troubleshoot runs the troubleshooting page's first commands, as written, for the node
// (NODE replaced by its name), with the release's kubectl (hack/node.sh builds it) and this
// cluster's kubeconfig, and returns what they printed.
func (c *cluster) troubleshoot(t *testing.T, nodeName string) string {
	t.Helper()
	doc, err := os.ReadFile("../../docs/operations.md")
	if err != nil {
		t.Fatal(err)
	}
	m := troubleshootingBlock.FindSubmatch(doc)
	if m == nil {
		t.Fatal("docs/operations.md has no shell block under ## Troubleshooting")
	}
	parts, err := node.PartsDir()
	if err != nil {
		t.Fatal(err)
	}
	script := bytes.ReplaceAll(m[1], []byte("NODE"), []byte(nodeName))
	cmd := exec.Command("bash", "-euo", "pipefail", "-c", string(script))
	cmd.Env = append(os.Environ(), "KUBECONFIG="+c.plane.Kubeconfig(), "PATH="+parts+string(filepath.ListSeparator)+os.Getenv("PATH"))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the troubleshooting page's commands:\n%s\n%v\n%s", script, err, out)
	}
	return string(out)
}
