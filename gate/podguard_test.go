package gate

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/startupgate/startupgate/gate/config"
	"github.com/startupgate/startupgate/gate/rule"
	"github.com/startupgate/startupgate/internal/testobj"
)

var (
	podKind     = metav1.GroupVersionKind{Version: "v1", Kind: "Pod"}
	bindingKind = metav1.GroupVersionKind{Version: "v1", Kind: "Binding"}
)

func TestPodGuard(t *testing.T) {
	cfg := testobj.ValidConfig(t, nil)
	tolerating := corev1.Toleration{Key: config.DefaultTaintKey, Operator: corev1.TolerationOpExists}
	objects := func() []client.Object {
		return []client.Object{
			testobj.Node("gated", t0, testobj.Taints(notReadyTaint, gateTaint)),
			testobj.Node("gated-other-value", t0, testobj.Taints(corev1.Taint{Key: config.DefaultTaintKey, Value: "true", Effect: corev1.TaintEffectNoSchedule})),
			testobj.Node("released", t0, testobj.NodeAnnotation(config.DefaultCompletedAnnotation, "1700000000")),
			testobj.Node("untainted", t0, testobj.Taints(notReadyTaint)),
			// Released, yet someone put the taint back: released nodes are never gated again.
			testobj.Node("released-tainted", t0, testobj.Taints(gateTaint), testobj.NodeAnnotation(config.DefaultCompletedAnnotation, "1700000000")),
			// Pods that bindings refer to.
			testobj.Pod("plain", "", t0, testobj.Namespace("default")),
			testobj.Pod("tolerating", "", t0, testobj.Namespace("default"), testobj.Tolerations(tolerating)),
			testobj.Pod("mirror", "", t0, testobj.Namespace("default"), testobj.PodAnnotation(mirrorPodAnnotation, "abc")),
		}
	}
	binding := func(pod, node string) *corev1.Binding {
		return &corev1.Binding{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Binding"},
			ObjectMeta: metav1.ObjectMeta{Name: pod, Namespace: "default"},
			Target:     corev1.ObjectReference{Kind: "Node", Name: node},
		}
	}
	bindingNoName := binding("", "gated")

	tests := []struct {
		name     string
		kind     metav1.GroupVersionKind
		reqName  string
		object   any
		raw      []byte // overrides object
		allowed  bool
		code     int32    // for a rejection that is an error, not a denial
		contains []string // in the message
		result   string   // pod guard metric labels, result/reason
	}{
		{
			name:     "pod bound to a gated node, no toleration",
			kind:     podKind,
			object:   testobj.Pod("web", "gated", t0, testobj.Namespace("default")),
			allowed:  false,
			contains: []string{`"gated"`, "startup.k8s.io/initializing=wait:NoSchedule"},
			result:   "denied/held",
		},
		{
			name:     "pod bound to a node holding the taint with another value",
			kind:     podKind,
			object:   testobj.Pod("web", "gated-other-value", t0, testobj.Namespace("default")),
			allowed:  false,
			contains: []string{`"gated-other-value"`, config.DefaultTaintKey},
			result:   "denied/held",
		},
		{
			name:     "pod tolerating a different taint only",
			kind:     podKind,
			object:   testobj.Pod("web", "gated", t0, testobj.Namespace("default"), testobj.Tolerations(corev1.Toleration{Key: notReadyTaint.Key, Operator: corev1.TolerationOpExists})),
			allowed:  false,
			contains: []string{`"gated"`},
			result:   "denied/held",
		},
		{
			name:    "tolerating pod",
			kind:    podKind,
			object:  testobj.Pod("init", "gated", t0, testobj.Tolerations(tolerating)),
			allowed: true,
			result:  "allowed/tolerated",
		},
		{
			name:    "pod tolerating everything",
			kind:    podKind,
			object:  testobj.Pod("init", "gated", t0, testobj.Tolerations(corev1.Toleration{Operator: corev1.TolerationOpExists})),
			allowed: true,
			result:  "allowed/tolerated",
		},
		{
			name:    "mirror pod",
			kind:    podKind,
			object:  testobj.Pod("static-web", "gated", t0, testobj.PodAnnotation(mirrorPodAnnotation, "abc")),
			allowed: true,
			result:  "allowed/not-bound",
		},
		{
			name:    "released node",
			kind:    podKind,
			object:  testobj.Pod("web", "released", t0),
			allowed: true,
			result:  "allowed/not-held",
		},
		{
			name:    "released node that holds the taint again",
			kind:    podKind,
			object:  testobj.Pod("web", "released-tainted", t0),
			allowed: true,
			result:  "allowed/not-held",
		},
		{
			name:    "untainted node",
			kind:    podKind,
			object:  testobj.Pod("web", "untainted", t0),
			allowed: true,
			result:  "allowed/not-held",
		},
		{
			name:    "unknown node",
			kind:    podKind,
			object:  testobj.Pod("web", "missing", t0),
			allowed: true,
			result:  "allowed/node-not-found",
		},
		{
			name:    "no nodeName (goes through the scheduler)",
			kind:    podKind,
			object:  testobj.Pod("web", "", t0),
			allowed: true,
			result:  "allowed/not-bound",
		},
		{
			name:     "binding to a gated node",
			kind:     bindingKind,
			reqName:  "plain",
			object:   binding("plain", "gated"),
			allowed:  false,
			contains: []string{`"gated"`, "startup.k8s.io/initializing=wait:NoSchedule"},
			result:   "denied/held",
		},
		{
			name:     "binding without a name uses the request name",
			kind:     bindingKind,
			reqName:  "plain",
			object:   bindingNoName,
			allowed:  false,
			contains: []string{`"gated"`},
			result:   "denied/held",
		},
		{
			name:    "binding of a tolerating pod",
			kind:    bindingKind,
			reqName: "tolerating",
			object:  binding("tolerating", "gated"),
			allowed: true,
			result:  "allowed/tolerated",
		},
		{
			name:    "binding of a mirror pod",
			kind:    bindingKind,
			reqName: "mirror",
			object:  binding("mirror", "gated"),
			allowed: true,
			result:  "allowed/not-bound",
		},
		{
			name:    "binding to a released node",
			kind:    bindingKind,
			reqName: "plain",
			object:  binding("plain", "released"),
			allowed: true,
			result:  "allowed/not-held",
		},
		{
			// Read only because the node is held: the Pod, gone, cannot show a toleration.
			name:     "binding of an unknown pod to a gated node",
			kind:     bindingKind,
			reqName:  "ghost",
			object:   binding("ghost", "gated"),
			contains: []string{`"gated"`, "default/ghost"},
			result:   "denied/pod-unread",
		},
		{
			name:    "binding of an unknown pod to a released node",
			kind:    bindingKind,
			reqName: "ghost",
			object:  binding("ghost", "released"),
			allowed: true,
			result:  "allowed/not-held",
		},
		{
			name:     "malformed pod",
			kind:     podKind,
			raw:      []byte(`{"spec":{"nodeName":7}}`),
			code:     http.StatusBadRequest,
			contains: []string{"decoding pod"},
			result:   "error/malformed",
		},
		{
			name:     "malformed binding",
			kind:     bindingKind,
			raw:      []byte(`{"target":`),
			code:     http.StatusBadRequest,
			contains: []string{"decoding binding"},
			result:   "error/malformed",
		},
		{
			name:     "other kind",
			kind:     metav1.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"},
			raw:      []byte(`{}`),
			code:     http.StatusBadRequest,
			contains: []string{"Pod and Binding"},
			result:   "error/malformed",
		},
		{
			name:     "no object",
			kind:     podKind,
			code:     http.StatusBadRequest,
			contains: []string{"Pod and Binding"},
			result:   "error/malformed",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, cs := newFakeClient(interceptor.Funcs{}, objects()...)
			g := &PodGuard{Cache: c, API: c, Config: cfg}
			raw := tc.raw
			if raw == nil && tc.object != nil {
				raw = mustJSON(t, tc.object)
			}
			req := admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
				UID: "u1", Kind: tc.kind, Namespace: "default", Name: tc.reqName,
				Operation: admissionv1.Create, Object: runtime.RawExtension{Raw: raw},
			}}
			var before float64
			if tc.result != "" {
				before = guardCount(t, tc.result)
			}
			resp := g.Handle(context.Background(), req)

			if resp.Allowed != tc.allowed {
				t.Fatalf("Handle() allowed = %v, want %v (%+v)", resp.Allowed, tc.allowed, resp.Result)
			}
			if !resp.Allowed {
				if resp.Result == nil {
					t.Fatalf("rejection without a result")
				}
				wantCode := tc.code
				if wantCode == 0 {
					wantCode = http.StatusForbidden // admission.Denied
				}
				if resp.Result.Code != wantCode {
					t.Errorf("result code = %d, want %d", resp.Result.Code, wantCode)
				}
				for _, s := range tc.contains {
					if !strings.Contains(resp.Result.Message, s) {
						t.Errorf("message %q does not contain %q", resp.Result.Message, s)
					}
				}
			}
			if tc.result != "" {
				if d := guardCount(t, tc.result) - before; d != 1 {
					t.Errorf("pod guard requests{%s} grew by %v, want 1", tc.result, d)
				}
			}
			if w := cs.writes(); w != 0 {
				t.Errorf("the pod guard wrote %d times, want 0", w)
			}
		})
	}
}

// TestPodGuardTolerationAgainstNodeTaint: the guard stands in for the scheduler, which checks a
// Pod's tolerations against the taint the node actually holds. HasTaint deliberately matches
// the gate's taint on key and effect only, because kubelet --register-with-taints or Karpenter
// may register it with another value; the toleration check must then use that value too.
//
// KNOWN BUG (podguard.go, decide): tolerations are checked against config.Config.Taint (value
// "wait") before the node is even read, so both cases below get the wrong answer.
func TestPodGuardTolerationAgainstNodeTaint(t *testing.T) {
	cfg := testobj.ValidConfig(t, nil)
	nodeTaint := corev1.Taint{Key: config.DefaultTaintKey, Value: "true", Effect: corev1.TaintEffectNoSchedule}
	c, _ := newFakeClient(interceptor.Funcs{}, testobj.Node("karpenter-node", t0, testobj.Taints(nodeTaint)))
	g := &PodGuard{Cache: c, API: c, Config: cfg}
	tests := []struct {
		name       string
		toleration corev1.Toleration
		allowed    bool // what the scheduler's TaintToleration filter would decide
	}{
		{"tolerates the node's value", corev1.Toleration{Key: config.DefaultTaintKey, Operator: corev1.TolerationOpEqual, Value: "true", Effect: corev1.TaintEffectNoSchedule}, true},
		{"tolerates only the configured value", corev1.Toleration{Key: config.DefaultTaintKey, Operator: corev1.TolerationOpEqual, Value: config.DefaultTaintValue, Effect: corev1.TaintEffectNoSchedule}, false},
		{"Exists tolerates any value", corev1.Toleration{Key: config.DefaultTaintKey, Operator: corev1.TolerationOpExists}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// Cross-check the expectation with the scheduler's own helper.
			if got := tc.toleration.ToleratesTaint(klog.Background(), &nodeTaint, true); got != tc.allowed {
				t.Fatalf("test table is wrong: ToleratesTaint = %v", got)
			}
			pod := testobj.Pod("web", "karpenter-node", t0, testobj.Namespace("default"), testobj.Tolerations(tc.toleration))
			resp := g.Handle(context.Background(), admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
				UID: "u1", Kind: podKind, Namespace: "default", Operation: admissionv1.Create,
				Object: runtime.RawExtension{Raw: mustJSON(t, pod)},
			}})
			if resp.Allowed != tc.allowed {
				t.Errorf("Handle() allowed = %v, want %v (%v)", resp.Allowed, tc.allowed, resp.Result)
			}
		})
	}
}

// guardFuzzNodes are the nodes FuzzPodGuard's requests bind to, each with the taint that
// must stop a Pod that does not tolerate it (none: every Pod passes). A continuous rule
// holds "cni-held" by its taint and "cni-window" by its failing requirement before the
// taint is back; "oos" carries only a condition rule's taint, which never gates at
// creation, so the guard leaves it to the scheduler.
var guardFuzzNodes = map[string]*corev1.Taint{
	"gated":            &gateTaint,
	"gated-true":       {Key: config.DefaultTaintKey, Value: "true", Effect: corev1.TaintEffectNoSchedule},
	"released":         nil,
	"released-tainted": nil,
	"untainted":        nil,
	"cni-held":         &cniTaint,
	"cni-window":       &cniTaint,
	"cni-ready":        nil,
	"oos":              nil,
}

// guardFuzzPods are the Pods in "default" that bindings name.
var guardFuzzPods = map[string]*corev1.Pod{
	"plain":      testobj.Pod("plain", "", t0, testobj.Namespace("default")),
	"tolerating": testobj.Pod("tolerating", "", t0, testobj.Namespace("default"), testobj.Tolerations(corev1.Toleration{Key: config.DefaultTaintKey, Operator: corev1.TolerationOpExists})),
	"tolerates-all": testobj.Pod("tolerates-all", "", t0, testobj.Namespace("default"),
		testobj.Tolerations(corev1.Toleration{Operator: corev1.TolerationOpExists})),
	"mirror": testobj.Pod("mirror", "", t0, testobj.Namespace("default"), testobj.PodAnnotation(mirrorPodAnnotation, "abc")),
}

// podGuardFuzzEnv is a guard over guardFuzzNodes and guardFuzzPods with three rules: the
// default startup rule, a continuous CNI rule on pool=cni and an out-of-service condition
// rule.
func podGuardFuzzEnv(tb testing.TB) (*PodGuard, *calls) {
	tb.Helper()
	cfg := testobj.ValidConfig(tb, func(c *config.Config) {
		c.Rules = []rule.Rule{
			{Name: config.DefaultRuleName, NodeSelector: config.DefaultNodeSelector, Taint: gateTaint, Components: []rule.Component{{Name: "init", Selector: config.DefaultInitLabel}}},
			{Name: "cni", Mode: rule.Continuous, NodeSelector: "pool=cni", Taint: cniTaint, Components: []rule.Component{{Name: "cni", Selector: "startup.k8s.io/component=cni"}}},
			{Name: "oos", Mode: rule.Condition, Taint: oosTaint, Match: []rule.Match{{Type: corev1.NodeReady, Status: "False"}}},
		}
	})
	released := func(n *corev1.Node) {
		testobj.NodeAnnotation(config.DefaultCompletedAnnotation, "1")(n)
		testobj.NodeAnnotation(cniDone, "1")(n)
	}
	cni := testobj.NodeLabel("pool", "cni")
	objs := []client.Object{
		testobj.Node("gated", t0, testobj.Taints(notReadyTaint, gateTaint)),
		testobj.Node("gated-true", t0, testobj.Taints(*guardFuzzNodes["gated-true"])),
		testobj.Node("released", t0, released),
		testobj.Node("released-tainted", t0, released, testobj.Taints(gateTaint)),
		testobj.Node("untainted", t0, testobj.Taints(notReadyTaint)),
		testobj.Node("cni-held", t0, cni, released, testobj.Taints(cniTaint)),
		testobj.Node("cni-window", t0, cni, released),
		testobj.Node("cni-ready", t0, cni, released),
		testobj.Node("oos", t0, released, testobj.Taints(oosTaint), testobj.NodeCondition(corev1.NodeReady, corev1.ConditionFalse)),
		componentPod("cni-window-cni", "cni-window", "cni"),
		componentPod("cni-ready-cni", "cni-ready", "cni", testobj.ReadyAt(t0)),
	}
	for _, p := range guardFuzzPods {
		objs = append(objs, p.DeepCopy())
	}
	c, cs := newFakeClient(interceptor.Funcs{}, objs...)
	return &PodGuard{Cache: c, API: c, Config: cfg}, cs
}

// guardWant is the guard's answer to one request: allowed, or a rejection with its code
// and a word its message must carry.
type guardWant struct {
	allowed bool
	code    int32
	says    string
}

// wantGuard is the answer FuzzPodGuard expects, from the node table and the scheduler's own
// toleration check: a Pod bound, by spec.nodeName or a Binding, to a node that holds a taint
// it does not tolerate is denied (403), and so is a Binding of a Pod that cannot be read to
// such a node; a request the guard cannot decode is an error (400); everything else is
// allowed. Operation and subresource do not matter: the webhook
// configuration sends only CREATE of pods and pods/binding, and Kind tells them apart.
func wantGuard(req admission.Request) guardWant {
	kind := req.Kind.Kind
	if req.Kind.Group != "" || req.Object.Raw == nil || (kind != "Pod" && kind != "Binding") {
		return guardWant{code: http.StatusBadRequest, says: "Pod and Binding"}
	}
	node, pod, bad := guardTarget(req)
	if bad != "" {
		return guardWant{code: http.StatusBadRequest, says: bad}
	}
	taint := guardFuzzNodes[node]
	if pod == nil { // a Binding of a Pod that does not exist: read only if the node holds
		if taint == nil {
			return guardWant{allowed: true}
		}
		return guardWant{code: http.StatusForbidden, says: strconv.Quote(node)}
	}
	if _, mirror := pod.Annotations[mirrorPodAnnotation]; mirror {
		return guardWant{allowed: true}
	}
	if taint == nil || slices.ContainsFunc(pod.Spec.Tolerations, func(t corev1.Toleration) bool {
		return t.ToleratesTaint(klog.Background(), taint, true)
	}) {
		return guardWant{allowed: true}
	}
	return guardWant{code: http.StatusForbidden, says: strconv.Quote(node)}
}

// guardTarget is the node a Pod or Binding request binds to and the Pod bound (nil: a
// Binding of a Pod that does not exist), or what the guard's error must say when it cannot
// tell.
func guardTarget(req admission.Request) (node string, pod *corev1.Pod, bad string) {
	if req.Kind.Kind == "Pod" {
		pod = &corev1.Pod{}
		if err := json.Unmarshal(req.Object.Raw, pod); err != nil {
			return "", nil, "decoding pod"
		}
		return pod.Spec.NodeName, pod, ""
	}
	b := &corev1.Binding{}
	if err := json.Unmarshal(req.Object.Raw, b); err != nil {
		return "", nil, "decoding binding"
	}
	return b.Target.Name, guardFuzzPods[cmp.Or(b.Name, req.Name)], ""
}

// podGuardSeeds are the requests of TestPodGuard's shape: a Pod with spec.nodeName, or a
// pods/binding, for every node and Pod of the fuzz environment, and the malformed ones.
func podGuardSeeds(tb testing.TB) []admission.Request {
	tb.Helper()
	req := func(kind metav1.GroupVersionKind, sub, name string, raw []byte) admission.Request {
		return admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
			Kind: kind, SubResource: sub, Name: name, Namespace: "default", Operation: admissionv1.Create,
			Object: runtime.RawExtension{Raw: raw},
		}}
	}
	var out []admission.Request
	for _, node := range slices.Sorted(maps.Keys(guardFuzzNodes)) {
		for _, name := range slices.Sorted(maps.Keys(guardFuzzPods)) {
			p := guardFuzzPods[name].DeepCopy()
			p.Spec.NodeName = node
			out = append(out, req(podKind, "", name, mustJSON(tb, p)),
				req(bindingKind, "binding", name, mustJSON(tb, &corev1.Binding{
					TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Binding"},
					ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
					Target:     corev1.ObjectReference{Kind: "Node", Name: node},
				})))
		}
	}
	return append(out,
		req(bindingKind, "binding", "plain", []byte(`{"target":{"name":"gated"}}`)),
		req(bindingKind, "binding", "ghost", []byte(`{"metadata":{"name":"ghost"},"target":{"name":"gated"}}`)),
		req(podKind, "", "web", []byte(`{"spec":{"nodeName":7}}`)),
		req(podKind, "", "web", []byte(`{"spec":{"nodeName":"gated","tolerations":[{"operator":"Exists","effect":"NoExecute"}]}}`)),
		req(podKind, "", "web", []byte(`{"spec":{"nodeName":"gated","tolerations":[{"key":"startup.k8s.io/initializing","operator":"Equal","value":"true"}]}}`)),
		req(bindingKind, "binding", "plain", []byte(`{"target":`)),
		req(metav1.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}, "", "d", []byte(`{}`)),
		req(podKind, "status", "web", []byte(`{}`)),
		req(podKind, "", "web", nil))
}

// FuzzPodGuard feeds the Pod guard arbitrary Pod CREATE and pods/binding CREATE requests.
// The guard runs with failurePolicy Ignore, so a panic would only let the request through,
// silently; the answer must be exactly wantGuard's, a rejection must always carry a code and
// a message, and the guard never writes.
func FuzzPodGuard(f *testing.F) {
	for _, r := range podGuardSeeds(f) {
		f.Add(r.Kind.Group, r.Kind.Kind, string(r.Operation), r.SubResource, r.Name, r.Object.Raw)
	}
	g, cs := podGuardFuzzEnv(f)
	f.Fuzz(func(t *testing.T, group, kind, op, sub, name string, raw []byte) {
		req := admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
			UID: "u1", Kind: metav1.GroupVersionKind{Group: group, Version: "v1", Kind: kind},
			Namespace: "default", Name: name, Operation: admissionv1.Operation(op), SubResource: sub,
			Object: runtime.RawExtension{Raw: raw},
		}}
		resp := g.Handle(context.Background(), req)
		if !resp.Allowed && (resp.Result == nil || resp.Result.Code == 0 || resp.Result.Message == "") {
			t.Fatalf("rejection without a code and a message: %+v", resp.Result)
		}
		want := wantGuard(req)
		if resp.Allowed != want.allowed {
			t.Fatalf("allowed = %v, want %v (%+v) for %s %q", resp.Allowed, want.allowed, resp.Result, kind, raw)
		}
		if !want.allowed && (resp.Result.Code != want.code || !strings.Contains(resp.Result.Message, want.says)) {
			t.Fatalf("result %d %q, want %d with %q, for %s %q", resp.Result.Code, resp.Result.Message, want.code, want.says, kind, raw)
		}
		if w := cs.writes(); w != 0 {
			t.Fatalf("the pod guard wrote %d times, want 0", w)
		}
	})
}

// TestPodGuardAPIUnreachable: the guard reads a node's init Pods from the API, as its cache
// may lag the unready write it must see. With the API unreachable for a moment (a cut
// connection, an apiserver restart), the cache is behind too: its watch runs on the same
// connection. A continuous rule's released node is then denied, whatever the cache shows
// (an explore saw 7 Pods bound on a cached Ready); a node the rule holds by its taint, whose
// hold the guard cannot confirm, stays held; one of a startup rule only is allowed.
func TestPodGuardAPIUnreachable(t *testing.T) {
	g, _ := podGuardFuzzEnv(t)
	api, _ := newFakeClient(interceptor.Funcs{
		Get: func(context.Context, client.WithWatch, client.ObjectKey, client.Object, ...client.GetOption) error {
			return errors.New("connection reset by peer")
		},
		List: func(context.Context, client.WithWatch, client.ObjectList, ...client.ListOption) error {
			return errors.New("connection reset by peer")
		},
	})
	g.API = api
	for node, allowed := range map[string]bool{"cni-window": false, "cni-ready": false, "cni-held": false, "released": true, "gated": false} {
		if resp := g.decide(context.Background(), node, nil).response(); resp.Allowed != allowed {
			t.Errorf("%s with the API unreachable: allowed %v (%s), want %v", node, resp.Allowed, resp.Result.Message, allowed)
		}
	}
}

// TestPodGuardCacheNotStarted: a restarted gate serves its webhooks before its cache has
// started (controller-runtime starts the webhook server first). A Node the cache cannot
// give yet is read from the API, not taken as "not found", which would allow every binding
// in the window the guard closes.
func TestPodGuardCacheNotStarted(t *testing.T) {
	g, _ := podGuardFuzzEnv(t)
	g.API = g.Cache
	cold, _ := newFakeClient(interceptor.Funcs{
		Get: func(context.Context, client.WithWatch, client.ObjectKey, client.Object, ...client.GetOption) error {
			return &cache.ErrCacheNotStarted{}
		},
		List: func(context.Context, client.WithWatch, client.ObjectList, ...client.ListOption) error {
			return &cache.ErrCacheNotStarted{}
		},
	})
	g.Cache = cold
	for node, allowed := range map[string]bool{"cni-window": false, "gated": false, "cni-ready": true, "no-such-node": true} {
		if resp := g.decide(context.Background(), node, nil).response(); resp.Allowed != allowed {
			t.Errorf("%s with the cache not started: allowed %v (%s), want %v", node, resp.Allowed, resp.Result.Message, allowed)
		}
	}
}

// TestPodGuardCacheNotSynced: a cache that has started but not synced blocks a read until it
// has; the guard waits cacheWait for it, not the webhook's whole timeout, and asks the API.
// With neither answering, it allows (failurePolicy Ignore would) and says why.
func TestPodGuardCacheNotSynced(t *testing.T) {
	g, _ := podGuardFuzzEnv(t)
	g.API = g.Cache
	block := func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() }
	g.Cache, _ = newFakeClient(interceptor.Funcs{
		Get: func(ctx context.Context, _ client.WithWatch, _ client.ObjectKey, _ client.Object, _ ...client.GetOption) error {
			return block(ctx)
		},
		List: func(ctx context.Context, _ client.WithWatch, _ client.ObjectList, _ ...client.ListOption) error {
			return block(ctx)
		},
	})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second) // the webhook's
	defer cancel()
	if resp := g.decide(ctx, "cni-window", nil).response(); resp.Allowed {
		t.Errorf("cni-window with the cache syncing: allowed (%s), want denied", resp.Result.Message)
	}
	if ctx.Err() != nil {
		t.Errorf("the decision took the webhook's whole timeout")
	}
	g.API, _ = newFakeClient(interceptor.Funcs{
		Get: func(context.Context, client.WithWatch, client.ObjectKey, client.Object, ...client.GetOption) error {
			return errors.New("connection refused")
		},
	})
	for _, c := range []struct {
		tolerations []corev1.Toleration
		allowed     bool
		says        string
	}{
		// A continuous rule's window may be open on a node the guard cannot see: only the
		// guard closes it, so it says not yet.
		{nil, false, "cannot be read now"},
		// A Pod that tolerates the continuous rule's taint has no window to fear; the
		// startup rule's taint, the primary protection, is the scheduler's to honour.
		{[]corev1.Toleration{{Key: cniTaint.Key, Operator: corev1.TolerationOpExists}}, true, "cannot read the node"},
	} {
		resp := g.decide(context.Background(), "cni-window", c.tolerations).response()
		if resp.Allowed != c.allowed || !strings.Contains(resp.Result.Message, c.says) {
			t.Errorf("neither the cache nor the API answering, tolerations %v: allowed %v (%s), want %v, saying %q",
				c.tolerations, resp.Allowed, resp.Result.Message, c.allowed, c.says)
		}
	}
}

// TestPodGuardAnswersInTime: the apiserver allows what the guard has not answered within the
// webhook's timeout (failurePolicy Ignore), and its clock runs from its own call, before the
// guard's starts. An explore saw a restarted gate's API reads take 9.9 s, while its cache had
// not synced, and four Pods bind in a continuous rule's window; another, with the apiserver
// loaded, saw nine of the guard's reads run out a budget of three quarters of 3 s, and nine
// Pods bound early on rebooted nodes in that run. So every read the guard makes ends within
// half the timeout, the other half left to the call's way there and back, and the guard's
// own answer is then a denial where a rule's window may be open.
func TestPodGuardAnswersInTime(t *testing.T) {
	const timeout = time.Second
	for _, c := range []struct {
		node string
		// hang: each read waits for its deadline; else it fails at once, so that every read
		// the guard makes is tried, each with what is left of the guard's whole budget.
		hang bool
	}{{"cni-window", true}, {"no-such-node", true}, {"cni-window", false}, {"no-such-node", false}} {
		node := c.node
		g, _ := podGuardFuzzEnv(t)
		g.Timeout = timeout
		var mu sync.Mutex
		var unbounded int
		var longest time.Duration
		// slow stands for an apiserver or a cache that does not answer: it waits for the
		// caller's deadline, and one that has none is counted (it would outlast the webhook).
		// What is left of the deadline when a read starts is the most it may take.
		slow := func(ctx context.Context) error {
			dl, ok := ctx.Deadline()
			mu.Lock()
			if !ok {
				unbounded++
			} else {
				longest = max(longest, time.Until(dl))
			}
			mu.Unlock()
			switch {
			case !ok:
				return errors.New("no deadline: the apiserver's webhook timeout comes first")
			case !c.hang:
				return errors.New("connection reset by peer")
			}
			<-ctx.Done()
			return ctx.Err()
		}
		reader, _ := newFakeClient(interceptor.Funcs{
			Get: func(ctx context.Context, _ client.WithWatch, _ client.ObjectKey, _ client.Object, _ ...client.GetOption) error {
				return slow(ctx)
			},
			List: func(ctx context.Context, _ client.WithWatch, _ client.ObjectList, _ ...client.ListOption) error {
				return slow(ctx)
			},
		})
		g.Cache, g.API = reader, reader
		pod := testobj.Pod("p", node, t0, testobj.Namespace("default"))
		resp := g.Handle(context.Background(), admissionRequest(podKind, admissionv1.Create, mustJSON(t, pod)))
		if resp.Allowed {
			t.Errorf("%s, nothing answering (hang %v): allowed (%s), want denied", node, c.hang, resp.Result.Message)
		}
		if unbounded > 0 {
			t.Errorf("%s (hang %v): %d reads had no deadline", node, c.hang, unbounded)
		}
		if longest > timeout/2 {
			t.Errorf("%s (hang %v): a read was given %v, more than half the webhook's timeout %v", node, c.hang, longest, timeout)
		}
	}
}

// guardCount is startupgate_pod_guard_requests_total's series "result/reason".
func guardCount(tb testing.TB, labels string) float64 {
	tb.Helper()
	result, reason, _ := strings.Cut(labels, "/")
	families, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		tb.Fatalf("gathering metrics: %v", err)
	}
	for _, mf := range families {
		if mf.GetName() != "startupgate_pod_guard_requests_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			got := map[string]string{}
			for _, l := range m.GetLabel() {
				got[l.GetName()] = l.GetValue()
			}
			if got["result"] == result && got["reason"] == reason {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}

// bindingRequest is a pods/binding CREATE of Pod pod in "default" to node.
func bindingRequest(tb testing.TB, pod, node string) admission.Request {
	tb.Helper()
	return admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
		UID: "u1", Kind: bindingKind, SubResource: "binding", Namespace: "default", Name: pod, Operation: admissionv1.Create,
		Object: runtime.RawExtension{Raw: mustJSON(tb, &corev1.Binding{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Binding"},
			ObjectMeta: metav1.ObjectMeta{Name: pod, Namespace: "default"},
			Target:     corev1.ObjectReference{Kind: "Node", Name: node},
		})},
	}}
}

// TestPodGuardOwnFailure: the guard's own failure never denies a binding it has no reason to
// deny. With a startup rule only, a binding to a released node is allowed without a read of
// its Pod, so a Pod read that fails (rate limited, timed out, the apiserver restarting) does
// not reject it, as it did when the guard read every binding's Pod first. Onto a held node
// such a binding is denied: the node gives the reason, and the scheduler retries.
func TestPodGuardOwnFailure(t *testing.T) {
	cfg := testobj.ValidConfig(t, nil)
	cache, _ := newFakeClient(interceptor.Funcs{},
		testobj.Node("released", t0, testobj.NodeAnnotation(config.DefaultCompletedAnnotation, "1700000000")),
		testobj.Node("gated", t0, testobj.Taints(gateTaint)))
	for _, fail := range []error{
		errors.New("client rate limiter Wait returned an error: rate: Wait(n=1) would exceed context deadline"),
		context.DeadlineExceeded,
	} {
		api, calls := newFakeClient(interceptor.Funcs{
			Get: func(context.Context, client.WithWatch, client.ObjectKey, client.Object, ...client.GetOption) error {
				return fail
			},
			List: func(context.Context, client.WithWatch, client.ObjectList, ...client.ListOption) error {
				return fail
			},
		})
		g := &PodGuard{Cache: cache, API: api, Config: cfg}
		before := guardCount(t, "denied/pod-unread")
		if resp := g.Handle(context.Background(), bindingRequest(t, "plain", "released")); !resp.Allowed {
			t.Errorf("binding to a released node, the Pod's read failing (%v): denied (%v), want allowed", fail, resp.Result)
		}
		if n := calls.reads(); n != 0 {
			t.Errorf("binding to a released node: %d API reads, want 0", n)
		}
		resp := g.Handle(context.Background(), bindingRequest(t, "plain", "gated"))
		if resp.Allowed || resp.Result.Code != http.StatusForbidden || !strings.Contains(resp.Result.Message, "default/plain") {
			t.Errorf("binding to a held node, the Pod's read failing (%v): %+v, want a denial naming the Pod", fail, resp.Result)
		}
		if d := guardCount(t, "denied/pod-unread") - before; d != 1 {
			t.Errorf("pod guard requests{denied/pod-unread} grew by %v, want 1", d)
		}
	}
}

// TestPodGuardReadsPerBinding: what an ordinary binding (a Pod that tolerates nothing, onto a
// released node) costs the guard in reads of the API, per config. A startup rule needs
// none: the cached node decides. A rule that gates reboots reads the node (the gate's cache
// may be behind the reboot), and a continuous rule reads its init Pods on the node, each by
// name (the cache may be behind their unready write); each read is pinned to the cached
// copy's resourceVersion, which the apiserver serves from its watch cache, with no etcd
// round trip. Neither reads the Pod, and neither lists: a list of Pods waits for the watch
// cache to catch up with etcd, which a burst keeps behind.
func TestPodGuardReadsPerBinding(t *testing.T) {
	released := func(n *corev1.Node) {
		testobj.NodeAnnotation(config.DefaultCompletedAnnotation, "1")(n)
		testobj.NodeAnnotation(cniDone, "1")(n)
	}
	for _, c := range []struct {
		name        string
		mod         func(*config.Config)
		gets, lists int
	}{
		{"startup rule", nil, 0, 0},
		{"onReboot gate", func(c *config.Config) {
			c.Rules = []rule.Rule{{Name: config.DefaultRuleName, NodeSelector: config.DefaultNodeSelector, Taint: gateTaint, OnReboot: rule.RebootGate,
				Components: []rule.Component{{Name: "init", Selector: config.DefaultInitLabel}}}}
		}, 1, 0},
		{"continuous rule", func(c *config.Config) {
			c.Rules = []rule.Rule{{Name: "cni", Mode: rule.Continuous, Taint: cniTaint, Components: []rule.Component{{Name: "cni", Selector: "startup.k8s.io/component=cni"}}}}
		}, 1, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := testobj.ValidConfig(t, c.mod)
			node := testobj.Node("n", t0, released, func(n *corev1.Node) { n.Status.NodeInfo.BootID = "b1" })
			objs := []client.Object{node, componentPod("n-cni", "n", "cni", testobj.ReadyAt(t0)), componentPod("n-init", "n", "init", testobj.ReadyAt(t0)),
				testobj.Pod("plain", "", t0, testobj.Namespace("default"))}
			cache, _ := newFakeClient(interceptor.Funcs{}, objs...)
			api, calls := newFakeClient(interceptor.Funcs{}, objs...)
			g := &PodGuard{Cache: cache, API: api, Config: cfg}
			resp := g.Handle(context.Background(), bindingRequest(t, "plain", "n"))
			if !resp.Allowed {
				t.Fatalf("ordinary binding to a released node: denied (%v)", resp.Result)
			}
			calls.mu.Lock()
			defer calls.mu.Unlock()
			if calls.gets != c.gets || calls.lists != c.lists {
				t.Errorf("API reads: %d gets and %d lists, want %d and %d", calls.gets, calls.lists, c.gets, c.lists)
			}
			if len(calls.pinned) != calls.gets {
				t.Errorf("API gets: %d of %d pinned to a resourceVersion (the apiserver's watch cache), want all", len(calls.pinned), calls.gets)
			}
			for key, rv := range calls.pinned {
				// No older than the gate's own copy: "0" (any) may be older on another apiserver.
				cached := map[bool]client.Object{true: &corev1.Node{}, false: &corev1.Pod{}}[key.Namespace == ""]
				if err := cache.Get(context.Background(), key, cached); err != nil || rv != cached.GetResourceVersion() {
					t.Errorf("get of %s pinned to resourceVersion %q, want the cached copy's %q (%v)", key, rv, cached.GetResourceVersion(), err)
				}
			}
		})
	}
}

// TestPodGuardHoldsOrphans: a node the gate holds by a taint no rule now names (a rule's
// former key before the lift puts the new one on, or a removed rule's taint in its grace
// period) is held for the guard too, as it is for the scheduler.
func TestPodGuardHoldsOrphans(t *testing.T) {
	oldKey := corev1.Taint{Key: "example.com/old", Value: "wait", Effect: corev1.TaintEffectNoSchedule}
	cfg := testobj.ValidConfig(t, nil)
	placed := func(name string) testobj.NodeOpt {
		return testobj.NodeAnnotation(cfg.PlacedAnnotation+"."+name, rule.PlacedValue(oldKey, cfg.Instance))
	}
	for _, c := range []struct {
		name string
		node *corev1.Node
	}{
		// The default rule, re-keyed from example.com/old: its node is rekeyed.
		{"re-keyed", testobj.Node("n", t0, testobj.Taints(oldKey), func(n *corev1.Node) {
			placed(config.DefaultRuleName)(n)
			testobj.NodeAnnotation(cfg.PlacedAnnotation, rule.PlacedValue(oldKey, cfg.Instance))(n)
		})},
		// A rule "gpu" removed from the config: its taint waits for the orphan lift.
		{"removed rule", testobj.Node("n", t0, testobj.Taints(oldKey), placed("gpu"),
			testobj.NodeAnnotation(config.DefaultCompletedAnnotation, "1"))},
	} {
		t.Run(c.name, func(t *testing.T) {
			if len(cfg.Orphans(c.node)) == 0 {
				t.Fatalf("test node has no orphan: %v", c.node.Annotations)
			}
			cache, _ := newFakeClient(interceptor.Funcs{}, c.node)
			g := &PodGuard{Cache: cache, API: cache, Config: cfg}
			resp := g.Handle(context.Background(), admissionRequest(podKind, admissionv1.Create,
				mustJSON(t, testobj.Pod("web", "n", t0, testobj.Namespace("default")))))
			if resp.Allowed || !strings.Contains(resp.Result.Message, oldKey.Key) {
				t.Errorf("Pod bound to a node held by %s: allowed %v (%v), want denied naming it", oldKey.Key, resp.Allowed, resp.Result)
			}
			tol := testobj.Pod("web", "n", t0, testobj.Namespace("default"), testobj.Tolerations(corev1.Toleration{Key: oldKey.Key, Operator: corev1.TolerationOpExists}))
			if resp := g.Handle(context.Background(), admissionRequest(podKind, admissionv1.Create, mustJSON(t, tol))); !resp.Allowed {
				t.Errorf("Pod tolerating %s: denied (%v), want allowed", oldKey.Key, resp.Result)
			}
		})
	}
}

// TestPodGuardContinuousExpected: a continuous rule's check in the guard counts a component
// whose DaemonSet targets the node as the controller does (rule.ExpectedOn): its Pod deleted,
// the component is unmet, not absent, and a binding onto the node is denied until the taint
// is back.
func TestPodGuardContinuousExpected(t *testing.T) {
	cfg := testobj.ValidConfig(t, func(c *config.Config) {
		c.Rules = []rule.Rule{{Name: "cni", Mode: rule.Continuous, Taint: cniTaint, Components: []rule.Component{
			{Name: "cni", Selector: "startup.k8s.io/component=cni"},
			{Name: "csi", Selector: "startup.k8s.io/component=csi"},
		}}}
	})
	node := testobj.Node("n", t0, testobj.NodeAnnotation(cniDone, "1"))
	csi := &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: "csi", Namespace: "kube-system"},
		Spec: appsv1.DaemonSetSpec{Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"startup.k8s.io/component": "csi"}}}}}
	// The cni component is Ready; the csi component's Pod was deleted, its DaemonSet stays.
	objs := []client.Object{node, csi, componentPod("n-cni", "n", "cni", testobj.ReadyAt(t0))}
	c, _ := newFakeClient(interceptor.Funcs{}, objs...)
	g := &PodGuard{Cache: c, API: c, Config: cfg}
	in := rule.Input{Node: node, Pods: []*corev1.Pod{componentPod("n-cni", "n", "cni", testobj.ReadyAt(t0))},
		Expected: cfg.EffectiveRules()[0].ExpectedOn(node, []appsv1.DaemonSet{*csi}), Now: time.Now()}
	if d := rule.Decide(cfg.EffectiveRules()[0], cfg.Readiness(), in); d.Met {
		t.Fatalf("the controller's decision counts the rule met: the test's premise is wrong")
	}
	resp := g.Handle(context.Background(), admissionRequest(podKind, admissionv1.Create,
		mustJSON(t, testobj.Pod("web", "n", t0, testobj.Namespace("default")))))
	if resp.Allowed || !strings.Contains(resp.Result.Message, `"csi"`) {
		t.Errorf("binding onto a node whose csi component's Pod was deleted: allowed %v (%v), want denied naming csi", resp.Allowed, resp.Result)
	}
}

// TestPodGuardSecondPassReadsNothing: a binding's second pass, with its Pod's tolerations,
// judges the node the first pass read. A read that fails the second time (the guard's own
// limit, in a burst) must not turn the first pass's denial into an allow: here the cache has
// not started, the API gives the node once, and the Pod tolerates nothing.
func TestPodGuardSecondPassReadsNothing(t *testing.T) {
	cfg := testobj.ValidConfig(t, nil)
	cold, _ := newFakeClient(interceptor.Funcs{
		Get: func(context.Context, client.WithWatch, client.ObjectKey, client.Object, ...client.GetOption) error {
			return &cache.ErrCacheNotStarted{}
		},
	})
	var nodeGets int
	api, _ := newFakeClient(interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if _, ok := obj.(*corev1.Node); ok {
				if nodeGets++; nodeGets > 1 {
					return errors.New("client rate limiter Wait returned an error: rate: Wait(n=1) would exceed context deadline")
				}
			}
			return c.Get(ctx, key, obj, opts...)
		},
	}, testobj.Node("gated", t0, testobj.Taints(gateTaint)), testobj.Pod("plain", "", t0, testobj.Namespace("default")))
	g := &PodGuard{Cache: cold, API: api, Config: cfg}
	if resp := g.Handle(context.Background(), bindingRequest(t, "plain", "gated")); resp.Allowed {
		t.Errorf("binding of a Pod that tolerates nothing to a held node: allowed (%v), want denied", resp.Result)
	}
	if nodeGets != 1 {
		t.Errorf("the node was read %d times, want once", nodeGets)
	}
}

// TestPodGuardFailedReadIsNotNotFound: a node the cache has not seen is NotFound there; when
// the API read then fails, that is a failed read, not a node that does not exist, and a
// continuous rule's window may be open on it.
func TestPodGuardFailedReadIsNotNotFound(t *testing.T) {
	g, _ := podGuardFuzzEnv(t)
	g.Cache, _ = newFakeClient(interceptor.Funcs{})
	g.API, _ = newFakeClient(interceptor.Funcs{
		Get: func(context.Context, client.WithWatch, client.ObjectKey, client.Object, ...client.GetOption) error {
			return errors.New("connection reset by peer")
		},
	})
	if resp := g.decide(context.Background(), "cni-window", nil).response(); resp.Allowed || !strings.Contains(resp.Result.Message, "cannot be read now") {
		t.Errorf("node in neither the cache nor a readable API: allowed %v (%s), want denied as unread", resp.Allowed, resp.Result.Message)
	}
}

// TestInFlight: the guard's reader serves at most n reads at once; a read that cannot start
// before its deadline fails, and every slot comes back, whether the read failed or not.
func TestInFlight(t *testing.T) {
	release, entered := make(chan struct{}), make(chan struct{}, 3)
	var mu sync.Mutex
	var inside, most int
	slow, _ := newFakeClient(interceptor.Funcs{
		Get: func(context.Context, client.WithWatch, client.ObjectKey, client.Object, ...client.GetOption) error {
			mu.Lock()
			inside++
			most = max(most, inside)
			mu.Unlock()
			entered <- struct{}{}
			<-release
			mu.Lock()
			inside--
			mu.Unlock()
			return errors.New("failed")
		},
	})
	r := InFlight(slow, 2)
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() { _ = r.Get(context.Background(), client.ObjectKey{Name: "n"}, &corev1.Node{}) })
	}
	<-entered
	<-entered
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := r.Get(ctx, client.ObjectKey{Name: "n"}, &corev1.Node{}); err == nil || !strings.Contains(err.Error(), "in flight") {
		t.Errorf("a third read with both slots taken: %v, want it to fail at its deadline", err)
	}
	close(release)
	wg.Wait()
	if most != 2 {
		t.Errorf("%d reads at once, want 2", most)
	}
	ok, _ := newFakeClient(interceptor.Funcs{}, testobj.Node("n", t0))
	r = InFlight(ok, 1)
	for range 3 { // each read gives its slot back
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		if err := r.Get(ctx, client.ObjectKey{Name: "n"}, &corev1.Node{}); err != nil {
			t.Errorf("read %v", err)
		}
		cancel()
	}
}

// TestPodGuardConfirmsAHoldLive: a cache behind the gate's own release (seconds, on a loaded
// apiserver) still shows the taint; a binding is denied only on the node as the apiserver
// has it. A bench saw bindings denied "still holds startup taint" on nodes released minutes
// before. When the API cannot be read, the cached taint stands.
func TestPodGuardConfirmsAHoldLive(t *testing.T) {
	cfg := testobj.ValidConfig(t, nil)
	cache, _ := newFakeClient(interceptor.Funcs{}, testobj.Node("n", t0, testobj.Taints(gateTaint)))
	released := testobj.Node("n", t0, testobj.NodeAnnotation(config.DefaultCompletedAnnotation, "1700000000"))
	api, _ := newFakeClient(interceptor.Funcs{}, released, testobj.Pod("plain", "", t0, testobj.Namespace("default")))
	g := &PodGuard{Cache: cache, API: api, Config: cfg}
	for _, req := range []admission.Request{
		bindingRequest(t, "plain", "n"),
		admissionRequest(podKind, admissionv1.Create, mustJSON(t, testobj.Pod("web", "n", t0, testobj.Namespace("default")))),
	} {
		if resp := g.Handle(context.Background(), req); !resp.Allowed {
			t.Errorf("%s to a node released, the cache behind: denied (%v), want allowed", req.Kind.Kind, resp.Result)
		}
	}
	g.API, _ = newFakeClient(interceptor.Funcs{
		Get: func(context.Context, client.WithWatch, client.ObjectKey, client.Object, ...client.GetOption) error {
			return errors.New("connection reset by peer")
		},
	})
	if resp := g.Handle(context.Background(), bindingRequest(t, "plain", "n")); resp.Allowed {
		t.Errorf("binding to a node the cache shows held, the API unreadable: allowed, want denied")
	}
}
