// Package model explores the state machine of one node under a startup rule that gates
// reboots, in pure code and to a fixpoint: every state reachable from a node just released,
// each visited once, over reboots, container restarts and warm-ups, the operator's edits
// (suspend, onReboot, a rename, a new taint key), the gate's orphan pass, and after each event
// the gate deciding on a fresh view of the init Pod, on the stale view it last had, or not at
// all (down, or the events coalesced into one reconcile). It decides as the controller does
// (rule.Decide, then Apply its write, until none is left). Whenever the gate has just decided,
// the invariants are judged on the ground truth the model keeps, not on the gate's code:
//
//   - early: the rule runs and gates reboots, the warm-up has not run on the boot the node
//     runs, and nothing stands between a Pod and the node: no taint, and the Pod guard
//     (which denies in state rebooted) would let it through;
//   - stranded: the warm-up has run on the boot the node runs, the init Pod is Ready, the
//     rule runs, and its taint is still on (an orphan the next pass lifts aside);
//   - released-while-suspended: the rule was suspended holding the node, is still
//     suspended, and the node carries no taint.
//
// Every violation must fall on one of the two limits concepts.md states, each of one record
// (a record is its taint's, so a rule given another taint and back meets its old record's
// limits again; a record adopted takes the other's):
//
//   - early: after the release, containers Ready that the record's rule did not record (it
//     did not decide, was suspended, ignored reboots, or had another taint: a restart on the
//     released boot, or the warm-up of a boot since), then a reboot seen before the kubelet
//     reported the new boot's containers;
//   - stranded: re-gated, a second reboot and its warm-up, before the record's rule decided
//     again (down, suspended, or with another taint); or that limit met by another record of
//     the same boot, whose readiness the rule counts as past (rule.pastReadiness).
//
// The model is a package of its own so that the gate's rule package keeps only the gate's
// code; it uses only rule's exported API, as the controller does.
package model

import (
	"fmt"
	"hash/fnv"
	"maps"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/startupgate/startupgate/gate/rule"
)

// t0 is the model's only instant: every decision, write and Ready transition happens at it,
// so that no timestamp makes two equal states differ.
var t0 = time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)

// The rule's taint, and the one it takes when re-keyed.
var (
	Taint        = corev1.Taint{Key: "example.com/cni-unready", Effect: corev1.TaintEffectNoSchedule}
	RekeyedTaint = corev1.Taint{Key: "example.com/cni-warming", Effect: corev1.TaintEffectNoSchedule}
)

// Options change the gate the model runs: a known defect the exploration must catch.
type Options struct {
	// Defect, when set, changes each decision the gate makes on the Pod it saw.
	Defect func(d rule.Decision, pod *corev1.Pod) rule.Decision
	// LiftSuspended: the orphan pass lifts a suspended rule's old key.
	LiftSuspended bool
	// MaxStates stops the walk once this many states are known (0: none); the result then
	// has no fixpoint.
	MaxStates int
	// StopOnDefect ends the walk at the first violation off the documented limits: a
	// negative control needs only that one.
	StopOnDefect bool
	// Layer, when set, is told of each layer of the walk: its depth, and the states known.
	Layer func(depth, states int)
}

// Result is what a walk found.
type Result struct {
	// States are the distinct states reached; Transitions the events taken from them, and
	// Judged those after which the gate decided and the invariants were judged.
	States, Transitions, Judged int
	// Depth is the most events on a shortest path to a state.
	Depth int
	// Fixpoint: every state reachable was reached.
	Fixpoint bool
	// Limits counts the violations on a documented limit; Defects the others, each with
	// its shortest path.
	Limits  int
	Defects []string
}

// Explore walks the state machine breadth first, each state once, until no new state is
// reached (or opts.MaxStates). It keeps a hash of each state it has reached, and the key of
// each it has yet to expand.
func Explore(opts Options) (Result, error) {
	e, err := newExplorer(opts)
	if err != nil {
		return Result{}, err
	}
	start := &world{node: startNode(), ready: true, shownReady: true}
	e.decide(start, true)
	if e.rule(start).HasTaint(start.node) {
		return Result{}, fmt.Errorf("start: not released: %v", start.node.Annotations)
	}
	evs := maps.Clone(events)
	evs["orphan-lift"] = e.orphanLift
	names := slices.Sorted(maps.Keys(evs))
	type pending struct {
		key  string
		path *step
	}
	var res Result
	first := start.key()
	visited := map[[16]byte]struct{}{hash(first): {}}
	frontier := []pending{{key: first}}
	for ; len(frontier) > 0; res.Depth++ {
		var next []pending
		for _, p := range frontier {
			w, err := decode(p.key)
			if err != nil {
				return res, err
			}
			w.path = p.path
			for _, name := range names {
				for _, reaction := range []string{"fresh", "stale", "none"} {
					n := w.clone()
					if !evs[name](n) {
						break
					}
					res.Transitions++
					n.path = &step{event: name + "/" + reaction, prev: w.path}
					e.react(n, reaction, &res)
					k := n.key()
					h := hash(k)
					if _, seen := visited[h]; !seen {
						visited[h] = struct{}{}
						next = append(next, pending{key: k, path: n.path})
					}
				}
			}
			if opts.MaxStates > 0 && len(visited) >= opts.MaxStates || opts.StopOnDefect && len(res.Defects) > 0 {
				res.States = len(visited)
				return res, nil
			}
		}
		frontier = next
		if opts.Layer != nil {
			opts.Layer(res.Depth+1, len(visited))
		}
	}
	res.Depth-- // the last layer reached nothing new
	res.States, res.Fixpoint = len(visited), true
	return res, nil
}

// hash is a state's key, hashed: 128 bits, so that two of the walk's few million states
// never share one in practice.
func hash(key string) [16]byte {
	h := fnv.New128a()
	h.Write([]byte(key))
	var out [16]byte
	h.Sum(out[:0])
	return out
}

// react runs the gate after an event, and judges what it left.
func (e *explorer) react(n *world, reaction string, res *Result) {
	switch reaction {
	case "fresh":
		e.decide(n, true)
	case "stale":
		e.decide(n, false)
		e.decide(n, true)
	default:
		return
	}
	res.Judged++
	switch v := e.judge(n); {
	case v == "":
	case v == "early" && n.early[n.rec()], v == "stranded" && n.stranded[n.rec()]:
		res.Limits++
	default:
		res.Defects = append(res.Defects, fmt.Sprintf("%s after %s: taints %v, annotations %v", v, n.path, n.node.Spec.Taints, n.node.Annotations))
	}
}

// startNode is a node the rule placed its taint on, at boot b0; the first decision releases it.
func startNode() *corev1.Node {
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "n", CreationTimestamp: metav1.NewTime(t0), Labels: map[string]string{},
			Annotations: map[string]string{rule.DefaultPlacedAnnotation + "." + rule.RecordName(Taint): rule.PlacedValue(Taint, "")}},
		Spec:   corev1.NodeSpec{Taints: []corev1.Taint{Taint}},
		Status: corev1.NodeStatus{NodeInfo: corev1.NodeSystemInfo{BootID: "b0"}},
	}
}

// pods are the init Pods of the first starts, made once: the walk asks for one at every
// decision, and the gate only reads them.
var pods = func() (out [8][2]*corev1.Pod) {
	for gen := range out {
		out[gen] = [2]*corev1.Pod{newInitPod(gen, false), newInitPod(gen, true)}
	}
	return out
}()

// initPod is the CNI Pod running its containers' gen-th start: container ID and restart
// count as a kubelet writes them; Ready (since t0, by the kubelet's clock) or not.
func initPod(gen int, ready bool) *corev1.Pod {
	if gen < len(pods) {
		if ready {
			return pods[gen][1]
		}
		return pods[gen][0]
	}
	return newInitPod(gen, ready)
}

func newInitPod(gen int, ready bool) *corev1.Pod {
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "cni", Namespace: "kube-system", UID: "cni-uid", CreationTimestamp: metav1.NewTime(t0),
			Labels: map[string]string{"app": "cni"}},
		Spec: corev1.PodSpec{NodeName: "n", Containers: []corev1.Container{{Name: "c"}}},
		Status: corev1.PodStatus{
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: status, LastTransitionTime: metav1.NewTime(t0)}},
			ContainerStatuses: []corev1.ContainerStatus{{Name: "c", Ready: ready,
				ContainerID: fmt.Sprintf("containerd://c-%d", gen), RestartCount: int32(gen)}},
		},
	}
}
