package sim

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/startupgate/startupgate/sim/check"
	"github.com/startupgate/startupgate/sim/faults"
	"github.com/startupgate/startupgate/sim/kubelet"
	"github.com/startupgate/startupgate/sim/record"
	"github.com/startupgate/startupgate/sim/report"
	"github.com/startupgate/startupgate/sim/scenario"
)

// play runs the timeline, each step in its own goroutine at its offset (and the gate, if
// the scenario installs it late, on gateCtx), and waits until the run settles or times out.
func (rn *run) play(ctx, gateCtx context.Context) {
	if d := rn.sc.GateStartsAt; d > 0 {
		go func() {
			select {
			case <-gateCtx.Done():
			case <-time.After(d):
				if rn.sc.GateStartsAfterBound && !rn.waitBound(gateCtx) {
					return
				}
				if err := rn.harness.Start(gateCtx, rn.replicaCount()); err != nil {
					rn.fail(fmt.Errorf("starting gate late: %w", err))
				}
			}
		}()
	}
	var wg sync.WaitGroup
	after := sequenced(rn.sc.Timeline)
	done := make([]chan struct{}, len(rn.sc.Timeline))
	for i := range done {
		done[i] = make(chan struct{})
	}
	for i := range rn.sc.Timeline {
		step := &rn.sc.Timeline[i]
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer close(done[i])
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Until(rn.start.Add(step.At))):
			}
			for _, p := range after[i] {
				select {
				case <-ctx.Done():
					return
				case <-done[p]:
				}
			}
			if step.AfterBound && !rn.waitBound(ctx) {
				return
			}
			if step.AfterReleased && !rn.waitReleased(ctx) {
				return
			}
			if step.AfterRegated && !rn.waitRegated(ctx) {
				return
			}
			rn.step(ctx, step)
			rn.mu.Lock()
			rn.steps++
			rn.lastStep = time.Now()
			rn.mu.Unlock()
		}()
	}
	rn.waitSettled(ctx)
	stepsDone := make(chan struct{})
	go func() { wg.Wait(); close(stepsDone) }()
	select {
	case <-stepsDone:
	case <-time.After(time.Second):
		// Steps still running (a join retrying against a closed webhook) end with ctx.
	}
}

// sequenced gives, for each step, the earlier steps it must wait for. Node condition steps
// take effect in timeline order. Run each at its offset alone and two at the same offset
// race, and under a slow apiserver an earlier one still writing can finish after a later
// one: a clear can land before the condition it clears, and the node ends with the
// condition the timeline had removed. Steps that wait (AfterBound, AfterReleased) keep
// their order too, in one chain: on a slow machine two of them are held past their offsets
// and released by the same binding or release, and a reboot would then race the Pods meant
// to arrive after it. Other steps keep to their
// offsets only: a join retries against a closed webhook and a fault lasts its window, so
// chaining them would stall the steps behind them.
func sequenced(steps []scenario.Step) [][]int {
	after := make([][]int, len(steps))
	lastCond, lastWait := -1, -1
	for i := range steps {
		_, cond := steps[i].Action().(*scenario.NodeCondition)
		if cond && lastCond >= 0 {
			after[i] = append(after[i], lastCond)
		}
		waits := steps[i].AfterBound || steps[i].AfterReleased || steps[i].AfterRegated
		if waits && lastWait >= 0 && (!cond || lastWait != lastCond) {
			after[i] = append(after[i], lastWait)
		}
		if cond {
			lastCond = i
		}
		if waits {
			lastWait = i
		}
	}
	return after
}

// waitSettled returns once the run has settled, its timeout has passed, or ctx ends,
// printing progress once a second if asked to.
func (rn *run) waitSettled(ctx context.Context) {
	deadline := rn.start.Add(rn.sc.Timeout)
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	var lastProgress time.Time
	for {
		settled := rn.settled()
		timedOut := !settled && time.Now().After(deadline)
		if rn.Opts.Progress != nil && (time.Since(lastProgress) >= time.Second || settled || timedOut) {
			phase := report.Running
			switch {
			case settled:
				phase = report.Settled
			case timedOut:
				phase = report.TimedOut
			case lastProgress.IsZero():
				phase = report.Started
			}
			lastProgress = time.Now()
			rn.progress(phase)
		}
		if settled || timedOut {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

func (rn *run) step(ctx context.Context, s *scenario.Step) {
	act := rn.action(s.Action())
	if act == nil {
		rn.fail(fmt.Errorf("step at %s: no action the runner knows (%T)", s.At, s.Action()))
		return
	}
	if err := act(ctx); err != nil && ctx.Err() == nil {
		rn.fail(fmt.Errorf("step at %s: %w", s.At, err))
	}
}

// action is how the run carries out one step action (one of scenario.Step's action
// types), or nil for a type it does not know. TestEveryStepKindRuns holds it to the list
// in scenario.Step.Actions.
func (rn *run) action(a any) func(context.Context) error {
	env := rn.faultEnv()
	switch a := a.(type) {
	case *scenario.Join:
		return func(ctx context.Context) error { rn.join(ctx, a); return nil }
	case *scenario.Reregister:
		return func(ctx context.Context) error { return rn.reregister(ctx, a) }
	case *scenario.Scale:
		return func(ctx context.Context) error { return rn.scale(ctx, a) }
	case *scenario.NodeDelete:
		return func(ctx context.Context) error { return rn.nodeDelete(ctx, a) }
	case *scenario.Relabel:
		return func(ctx context.Context) error { return rn.relabel(ctx, a) }
	case *scenario.InitPod:
		return func(ctx context.Context) error { return rn.initPod(ctx, a) }
	case *scenario.NodeCondition:
		return func(ctx context.Context) error { return rn.nodeCondition(ctx, a) }
	case *scenario.KubeletStop:
		return func(ctx context.Context) error { return rn.kubeletStop(ctx, a) }
	case *scenario.Reboot:
		return func(ctx context.Context) error { return rn.reboot(ctx, a) }
	case *scenario.SuspendRule:
		return func(ctx context.Context) error { return rn.suspendRule(ctx, a) }
	case *scenario.CrashAtWrite:
		return func(context.Context) error {
			return rn.harness.CrashAtWrite(a.Write, a.After, a.RestartAfter, a.Matching)
		}
	case *scenario.WatchDelay:
		return func(context.Context) error { return rn.harness.DelayWatches(a.Resource, a.Delay, a.For) }
	case *scenario.EditRule:
		return func(ctx context.Context) error { return rn.editRule(ctx, a) }
	case *scenario.PauseAutoscaler:
		return func(ctx context.Context) error { return rn.pauseAutoscaler(ctx, a) }
	case *scenario.WebhookOutage:
		return func(ctx context.Context) error { return faults.WebhookOutage(ctx, env, a) }
	case *scenario.WebhookLatency:
		return func(ctx context.Context) error { return faults.WebhookLatency(ctx, env, a) }
	case *scenario.GateCrash:
		return func(ctx context.Context) error { return faults.GateCrash(ctx, env, a) }
	case *scenario.LeaderFailover:
		return func(ctx context.Context) error { return faults.LeaderFailover(ctx, env, a) }
	case *scenario.TaintWriters:
		return func(ctx context.Context) error { return faults.TaintWriters(ctx, env, a) }
	case *scenario.APIServerRestart:
		return func(ctx context.Context) error { return faults.APIServerRestart(ctx, env, a) }
	case *scenario.WatchDrops:
		return func(ctx context.Context) error { return faults.WatchDrops(ctx, env, a) }
	case *scenario.DeleteDaemonSet:
		return func(ctx context.Context) error { return faults.DeleteInitDaemonSet(ctx, env, a) }
	case *scenario.BypassPods:
		return func(ctx context.Context) error { return faults.BypassPods(ctx, env, a) }
	}
	return nil
}

// joinedNodes lists the names of the nodes registered so far.
func (rn *run) joinedNodes() []string {
	rn.mu.Lock()
	defer rn.mu.Unlock()
	out := make([]string, 0, len(rn.joins))
	for n := range rn.joins {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// join registers the nodes of a join step: all at once (bounded concurrency) or one per
// interval. A failed registration is retried every 500ms, as a kubelet would.
func (rn *run) join(ctx context.Context, j *scenario.Join) {
	sem := make(chan struct{}, 64)
	var wg sync.WaitGroup
	for i := 0; i < j.Count; i++ {
		name := rn.sc.NodeName(j.Prefix, i)
		rn.mu.Lock()
		rn.joins[name] = j
		rn.mu.Unlock()
		if j.Interval > 0 && i > 0 {
			select {
			case <-ctx.Done():
				return
			case <-time.After(j.Interval):
			}
		}
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			rn.register(ctx, name, j)
		}()
	}
	wg.Wait()
}

func (rn *run) register(ctx context.Context, name string, j *scenario.Join) {
	for {
		err := rn.kubelet.Register(ctx, name, j.Labels, j.CoreTaints(), j.ReadyAfter)
		if err == nil {
			rn.mu.Lock()
			rn.joined++
			rn.mu.Unlock()
			return
		}
		if apierrors.IsAlreadyExists(err) {
			rn.fail(err)
			return
		}
		rn.mu.Lock()
		rn.refused++
		if j.GatePool {
			rn.poolRefused = append(rn.poolRefused, check.Violation{Kind: check.KindGatePoolRefused, Node: name,
				AtMS: time.Since(rn.start).Milliseconds(), Detail: "a node of the pool the gate runs on was refused registration: " + err.Error()})
		}
		rn.mu.Unlock()
		select {
		case <-ctx.Done():
			return
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// reregister deletes a node and registers it again under the same name, as an autoscaler
// that reuses names does. With KeepOldInitPod the old node's init Pods stay bound and Ready,
// as they do while pod GC lags; otherwise they are deleted with the node.
func (rn *run) reregister(ctx context.Context, rr *scenario.Reregister) error {
	rn.mu.Lock()
	j := rn.joins[rr.Node]
	rn.mu.Unlock()
	if j == nil {
		return fmt.Errorf("reregister: node %s never joined", rr.Node)
	}
	rn.kubelet.Deregister(rr.Node)
	if err := rn.client.CoreV1().Nodes().Delete(ctx, rr.Node, metav1.DeleteOptions{}); client.IgnoreNotFound(err) != nil {
		return err
	}
	if !rr.KeepOldInitPod {
		if err := rn.deletePodsOn(ctx, rr.Node); err != nil {
			return err
		}
	}
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := rn.client.CoreV1().Nodes().Get(ctx, rr.Node, metav1.GetOptions{})
		return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
	}); err != nil {
		return fmt.Errorf("waiting for node %s to be gone: %w", rr.Node, err)
	}
	rn.mu.Lock()
	rn.joined--
	rn.mu.Unlock()
	rn.register(ctx, rr.Node, j)
	return nil
}

// nodeDelete removes a node as a scale-down would, with the Pods bound to it.
func (rn *run) nodeDelete(ctx context.Context, d *scenario.NodeDelete) error {
	rn.kubelet.Deregister(d.Node)
	if err := rn.client.CoreV1().Nodes().Delete(ctx, d.Node, metav1.DeleteOptions{}); client.IgnoreNotFound(err) != nil {
		return err
	}
	return rn.deletePodsOn(ctx, d.Node)
}

// relabel sets (or, for a null value, removes) labels on a node, as an operator or a node
// pool controller would.
func (rn *run) relabel(ctx context.Context, rl *scenario.Relabel) error {
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"labels": rl.Labels}})
	if err != nil {
		return err
	}
	if _, err := rn.client.CoreV1().Nodes().Patch(ctx, rl.Node, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("relabelling node %s: %w", rl.Node, err)
	}
	rn.note("relabel: node %s labels %s", rl.Node, patch)
	return nil
}

// initPod changes init Pods after their timeline, through the fake kubelet (readiness) or
// the API (deletion: the DaemonSet controller creates a new Pod).
func (rn *run) initPod(ctx context.Context, ip *scenario.InitPod) error {
	set := func(ready bool) error {
		n, err := rn.kubelet.SetInitReady(ip.Name, ip.Nodes, ready)
		rn.note("initPod %s: %d Pods ready=%v", ip.Name, n, ready)
		return err
	}
	switch ip.State {
	case scenario.InitPodUnready:
		return set(false)
	case scenario.InitPodReady:
		return set(true)
	case scenario.InitPodDelete:
		return rn.deleteInitPods(ctx, ip)
	}
	// Flap: unready and ready in turn, each state held for Every once written, then ready
	// for good. Each unready spell lasts Every plus one write, however slow the plane.
	end := time.Now().Add(ip.Duration)
	for ready := false; time.Now().Before(end); ready = !ready {
		if err := set(ready); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(ip.Every):
		}
	}
	return set(true)
}

// deleteInitPods deletes the init DaemonSet's Pods on the step's nodes (every node when
// none is named).
func (rn *run) deleteInitPods(ctx context.Context, ip *scenario.InitPod) error {
	for _, in := range rn.sc.Init {
		if in.Name != ip.Name {
			continue
		}
		sel := metav1.FormatLabelSelector(&metav1.LabelSelector{MatchLabels: in.Labels})
		if len(ip.Nodes) == 0 {
			return rn.deletePods(ctx, metav1.ListOptions{LabelSelector: sel})
		}
		for _, node := range ip.Nodes {
			if err := rn.deletePods(ctx, metav1.ListOptions{LabelSelector: sel, FieldSelector: "spec.nodeName=" + node}); err != nil {
				return err
			}
		}
	}
	return nil
}

// deletePodsOn deletes every Pod of the run bound to node.
func (rn *run) deletePodsOn(ctx context.Context, node string) error {
	return rn.deletePods(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + node})
}

// deletePods deletes, at once, the run's Pods that opts selects.
func (rn *run) deletePods(ctx context.Context, opts metav1.ListOptions) error {
	pods, err := rn.client.CoreV1().Pods(rn.ns).List(ctx, opts)
	if err != nil {
		return err
	}
	for _, p := range pods.Items {
		err := rn.client.CoreV1().Pods(rn.ns).Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To(int64(0))})
		if client.IgnoreNotFound(err) != nil {
			return err
		}
	}
	return nil
}

// scale sets a workload's replicas (workloads that arrive after the nodes).
func (rn *run) scale(ctx context.Context, s *scenario.Scale) error {
	_, err := rn.client.AppsV1().Deployments(rn.ns).Patch(ctx, s.Workload, "application/merge-patch+json",
		[]byte(fmt.Sprintf(`{"spec":{"replicas":%d}}`, s.Replicas)), metav1.PatchOptions{})
	if err == nil {
		rn.mu.Lock()
		rn.replicas[s.Workload] = s.Replicas
		rn.mu.Unlock()
	}
	return err
}

// settled: every step has run, every workload Pod is bound, no more nodes are stuck than
// expected, and the gated nodes have settled (nodesSettled).
func (rn *run) settled() bool {
	if rn.caughtEarly() {
		rn.mu.Lock()
		rn.stoppedCaught = true
		rn.mu.Unlock()
		return true
	}
	want := rn.wantPods()
	rn.mu.Lock()
	steps, lastStep := rn.steps, rn.lastStep
	rn.mu.Unlock()
	if steps < len(rn.sc.Timeline) {
		return false
	}
	recs := rn.recorder.Snapshot()
	if w := rn.sc.Expect.Window; w > 0 && time.Since(lastStep) < w && (rn.sc.Expect.ReplacementWithin == 0 || check.ReplacementsPending(recs)) {
		return false
	}
	if rn.quiet(recs) {
		return true
	}
	v := check.Check(recs, rn.start, rn.bounds())
	if v.WorkloadPods < want || v.Stuck > rn.sc.Expect.Stuck {
		return false
	}
	if claims := rn.nodeClaims(); len(claims) == 0 && rn.autoscale != nil || len(claims) > 0 && time.Since(claims[len(claims)-1].Created) < settleAfterClaims {
		return false
	}
	return nodesSettled(recs, v, rn.harness.Off())
}

// quiet reports whether Options.QuietFor has passed since a node's record last changed.
func (rn *run) quiet(recs []record.NodeRecord) bool {
	if rn.Opts.QuietFor <= 0 {
		return false
	}
	var b strings.Builder
	for _, rec := range recs {
		fmt.Fprintf(&b, "%s %d %d %d %d %d %d %d %d %d %d;", rec.Name, rec.Tainted.RV, rec.Released.RV, rec.Deleted.RV, rec.InitReady.RV,
			len(rec.Bindings), len(rec.Reboots), len(rec.Retainted), len(rec.CompletedAt), len(rec.LostTaints), len(rec.Unready))
	}
	rn.mu.Lock()
	defer rn.mu.Unlock()
	if p := b.String(); p != rn.recordsSeen || rn.recordsSince.IsZero() {
		rn.recordsSeen, rn.recordsSince = p, time.Now()
	}
	return time.Since(rn.recordsSince) >= rn.Opts.QuietFor
}

// nodesSettled: every gated node is either released or was never tainted but is already
// serving (the gate had no chance at it), no node re-gated after its last reboot is still
// warming up, and no rebooted node whose init Pods are Ready again on the new boot still
// carries the taint. The gate releases that one a moment after the Pods it waits for; a run
// that ended when the last workload Pod bound elsewhere judged it held for good, and one
// that ended during the warm-up saw the Pods Ready after the gate had stopped (the soak's
// rule-renamed-reboot seed 6). Without a gate nothing is released, so there it is enough
// that the init Pods are ready.
func nodesSettled(recs []record.NodeRecord, v check.Verdict, gateOff bool) bool {
	for _, rec := range recs {
		if !rec.Gated || !rec.Deleted.IsZero() {
			continue
		}
		if gateOff {
			if rec.InitReady.IsZero() {
				return false
			}
			continue
		}
		if rec.Released.IsZero() && rec.Tainted.IsZero() && !rec.HasWorkload() {
			return false
		}
		if n := len(rec.Reboots); n > 0 && !rec.Reboots[n-1].Regated.IsZero() && rec.Reboots[n-1].Reinit.IsZero() {
			return false
		}
	}
	return !slices.ContainsFunc(v.Violations, func(x check.Violation) bool { return x.Kind == check.KindHeldAfterReinit })
}

// caughtEarly: the run is a negative control (Options.StopWhenCaught) and the recorder
// already shows its violation, of a kind no later event undoes: a held node the autoscaler
// deleted stays deleted, and a Pod bound early stays bound early. Karpenter's control of
// karpenter-replace-consolidation showed its catch, then ran to its 5-minute timeout.
func (rn *run) caughtEarly() bool {
	var found []check.Violation
	switch rn.Opts.StopWhenCaught {
	case check.KindDisruptedWhileHeld:
		if rn.autoscale == nil {
			return false
		}
		found = check.DisruptedWhileHeld(rn.recorder.Snapshot(), rn.start, rn.holdingTaints())
	case check.KindEarlyPod:
		found = check.Check(rn.recorder.Snapshot(), rn.start, rn.bounds()).Violations
	default:
		return false
	}
	return slices.ContainsFunc(found, func(v check.Violation) bool { return v.Kind == rn.Opts.StopWhenCaught })
}

// wantPods is how many workload replicas the run has asked for so far.
func (rn *run) wantPods() int {
	rn.mu.Lock()
	defer rn.mu.Unlock()
	want := 0
	for _, n := range rn.replicas {
		want += int(n)
	}
	return want
}

// waitBound waits until every workload replica asked for so far is bound (false: ctx ended
// first), for a step that is AfterBound and for a late gate that is GateStartsAfterBound.
func (rn *run) waitBound(ctx context.Context) bool {
	return rn.waitFor(ctx, func(recs []record.NodeRecord) bool { return check.WorkloadPods(recs) >= rn.wantPods() })
}

// waitReleased waits until every gated node that has joined is released (false: ctx ended
// first), for a step that is AfterReleased.
func (rn *run) waitReleased(ctx context.Context) bool {
	return rn.waitFor(ctx, func(recs []record.NodeRecord) bool { return check.Held(recs) == 0 })
}

// waitRegated waits until every node of the last reboot step that ran carries a gating
// rule's taint again since its reboot (false: ctx ended first), for a step that is
// AfterRegated.
func (rn *run) waitRegated(ctx context.Context) bool {
	rn.mu.Lock()
	rebooted := rn.rebooted
	rn.mu.Unlock()
	return rn.waitFor(ctx, func(recs []record.NodeRecord) bool {
		for i := range recs {
			if n := len(recs[i].Reboots); slices.Contains(rebooted, recs[i].Name) && (n == 0 || recs[i].Reboots[n-1].Regated.IsZero()) {
				return false
			}
		}
		return true
	})
}

// waitFor polls the recorder until done holds (false: ctx ended first). It polls as
// waitSettled does, but asks only done instead of judging every invariant at each tick.
func (rn *run) waitFor(ctx context.Context, done func([]record.NodeRecord) bool) bool {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		if done(rn.recorder.Snapshot()) {
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case <-tick.C:
		}
	}
}

// progress reports the run's state to Opts.Progress: as data to a report.ProgressReceiver,
// else as a text line.
func (rn *run) progress(phase report.Phase) {
	v := check.Check(rn.recorder.Snapshot(), rn.start, rn.bounds())
	rn.mu.Lock()
	joined, refused := rn.joined, rn.refused
	rn.mu.Unlock()
	p := report.Progress{Scenario: rn.sc.Name, Seed: rn.seed, Phase: phase, Elapsed: time.Since(rn.start), Joined: joined,
		Gated: v.Gated, Released: v.Released, Early: check.ConfirmedEarly(v.Violations, rn.recorder.NodeRV()), Refused: refused,
		Nodes: rn.sc.JoinCount()}
	if rn.sc.Autoscaler != nil {
		p.Nodes = max(rn.sc.Expect.NodeClaims, v.Gated) // the autoscaler's nodes, as many as needed
	}
	if r, ok := rn.Opts.Progress.(report.ProgressReceiver); ok {
		r.Progress(p)
		return
	}
	fmt.Fprintln(rn.Opts.Progress, p)
}

// nodesOf resolves a step's nodes: by name, or the node a Pod of the run is bound to now.
func (rn *run) nodesOf(ctx context.Context, ref scenario.NodeRef) ([]string, error) {
	if ref.PodNode == "" {
		return ref.Nodes, nil
	}
	p, err := rn.client.CoreV1().Pods(rn.ns).Get(ctx, ref.PodNode, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("finding the node of pod %s: %w", ref.PodNode, err)
	}
	if p.Spec.NodeName == "" {
		return nil, fmt.Errorf("pod %s is not bound to a node", ref.PodNode)
	}
	return []string{p.Spec.NodeName}, nil
}

// nodeCondition sets or clears a node condition, as a termination handler or
// node-problem-detector would: a status write that keeps every other condition.
func (rn *run) nodeCondition(ctx context.Context, c *scenario.NodeCondition) error {
	nodes, err := rn.nodesOf(ctx, c.NodeRef)
	if err != nil {
		return err
	}
	for _, name := range nodes {
		err := kubelet.Retry(ctx, func() error {
			n, err := rn.client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			n.Status.Conditions = scenario.SetNodeCondition(n.Status.Conditions, c, metav1.Now())
			_, err = rn.client.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{})
			return err
		})
		if err != nil {
			return fmt.Errorf("setting condition %s on node %s: %w", c.Type, name, err)
		}
	}
	rn.note("condition %s=%s on %v", c.Type, map[bool]string{true: "(cleared)", false: c.Status}[c.Clear], nodes)
	return nil
}

// kubeletStop stops the fake kubelet of the nodes, and records when.
func (rn *run) kubeletStop(ctx context.Context, k *scenario.KubeletStop) error {
	nodes, err := rn.nodesOf(ctx, k.NodeRef)
	if err != nil {
		return err
	}
	for _, name := range nodes {
		rn.kubelet.Deregister(name)
		rn.recorder.KubeletStopped(name, time.Now())
	}
	rn.note("kubelet stopped on %v", nodes)
	return nil
}

// reboot reboots the nodes through their fake kubelets: a new boot ID, then their init
// Pods restarted.
func (rn *run) reboot(ctx context.Context, rb *scenario.Reboot) error {
	nodes, err := rn.nodesOf(ctx, rb.NodeRef)
	if err != nil {
		return err
	}
	rn.mu.Lock()
	rn.rebooted = nodes
	rn.mu.Unlock()
	n, err := rn.kubelet.Reboot(nodes)
	rn.note("reboot of %v: %d init Pods restarted", nodes, n)
	return err
}
