package kubelet

import (
	"fmt"
	"hash/fnv"
	"math/rand/v2"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/startupgate/startupgate/sim/scenario"
)

// bootID is the boot ID the node reports on its current boot: a UUID, as the kernel's, drawn
// from (seed, node, boot) so that a run's boot IDs repeat with its seed.
func (k *Kubelet) bootID(node string) string {
	k.mu.Lock()
	boot := k.boots[node]
	k.mu.Unlock()
	return BootID(k.Seed, node, boot)
}

// BootID is the boot ID of a node's boot-th boot (0: the one it registered on) in a run
// with this seed.
func BootID(seed uint64, node string, boot int) string {
	h := fnv.New64a()
	fmt.Fprintf(h, "%s\x00%d", node, boot)
	rng := rand.New(rand.NewPCG(seed, h.Sum64()))
	var b [16]byte
	for i := range b {
		b[i] = byte(rng.UintN(256))
	}
	b[6], b[8] = b[6]&0x0f|0x40, b[8]&0x3f|0x80 // version 4, RFC 4122 variant
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}

// Reboot reboots the nodes in the order a real kubelet shows it: the node first reports
// its new boot ID, then every init Pod on it turns unready (its containers restarted, so
// their restart counts grow) and comes back on its DaemonSet's timeline, a delay drawn
// afresh for this boot. Workload Pods keep running. It returns how many init Pods it
// restarted.
func (k *Kubelet) Reboot(nodes []string) (int, error) {
	restarted := 0
	for _, name := range nodes {
		k.mu.Lock()
		_, ours := k.nodes[name]
		if ours {
			k.boots[name]++
		}
		boot := k.boots[name]
		k.mu.Unlock()
		if !ours {
			return restarted, fmt.Errorf("rebooting node %s: its kubelet is not running", name)
		}
		if err := k.reportBoot(name); err != nil {
			return restarted, err
		}
		for _, rp := range k.initPodsOn(name) {
			restarted++
			restarts := restartsOf(rp.pod) + 1
			if err := k.setStatus(rp.pod, false, restarts); err != nil {
				return restarted, err
			}
			switch tl := rp.init.Ready; tl.Mode {
			case scenario.ModeNever, scenario.ModeCrashLoop:
			default:
				// The containers of this boot, unless the node boots again before they are
				// ready: a reboot kills them, and the next boot's come up instead.
				p := rp.pod
				k.after(k.delay(name, rp.init.Name, boot, tl), func() error {
					if k.bootCount(name) != boot {
						return nil
					}
					return k.ready(p, k.setStatus(p, true, restarts))
				})
			}
		}
	}
	return restarted, nil
}

// bootCount is how many times the node has rebooted.
func (k *Kubelet) bootCount(node string) int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.boots[node]
}

// reportBoot writes the node's new boot ID into its status.
func (k *Kubelet) reportBoot(name string) error {
	id := k.bootID(name)
	return Retry(k.ctx, func() error {
		n, err := k.Client.CoreV1().Nodes().Get(k.ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		n.Status.NodeInfo.BootID = id
		_, err = k.Client.CoreV1().Nodes().UpdateStatus(k.ctx, n, metav1.UpdateOptions{})
		if apierrors.IsNotFound(err) {
			return fmt.Errorf("rebooting node %s: %w", name, err)
		}
		return err
	})
}

type initPod struct {
	pod  *corev1.Pod
	init *scenario.InitDaemonSet
}

// initPodsOn lists the init Pods this kubelet has written on the node, as last written.
func (k *Kubelet) initPodsOn(node string) []initPod {
	k.mu.Lock()
	defer k.mu.Unlock()
	var out []initPod
	for _, p := range k.written {
		if p.Spec.NodeName != node || p.DeletionTimestamp != nil {
			continue
		}
		for i := range k.Init {
			if labels.SelectorFromSet(k.Init[i].Labels).Matches(labels.Set(p.Labels)) {
				out = append(out, initPod{pod: p, init: &k.Init[i]})
				break
			}
		}
	}
	return out
}

// restartsOf is the highest restart count among the Pod's containers.
func restartsOf(p *corev1.Pod) int32 {
	var n int32
	for _, c := range p.Status.ContainerStatuses {
		n = max(n, c.RestartCount)
	}
	return n
}
