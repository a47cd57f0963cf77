package gate

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"

	"github.com/startupgate/startupgate/gate/config"
	"github.com/startupgate/startupgate/gate/rule"
	"github.com/startupgate/startupgate/internal/testobj"

	jsonpatch "github.com/evanphx/json-patch/v5"
	"github.com/google/go-cmp/cmp"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/utils/ptr"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

var nodeKind = metav1.GroupVersionKind{Version: "v1", Kind: "Node"}

func admissionRequest(kind metav1.GroupVersionKind, op admissionv1.Operation, raw []byte) admission.Request {
	resource := metav1.GroupVersionResource{Version: kind.Version, Group: kind.Group, Resource: strings.ToLower(kind.Kind) + "s"}
	return admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
		UID:       "0f3c7e1e-1b7a-4c7e-9a57-2b1e8f6d0c11",
		Kind:      kind,
		Resource:  resource,
		Name:      "n1",
		Operation: op,
		Object:    runtime.RawExtension{Raw: raw},
	}}
}

// counterValue reads one counter from controller-runtime's registry, where the gate registers
// its metrics; 0 if the series does not exist yet.
func counterValue(tb testing.TB, name, label, value string) float64 {
	tb.Helper()
	return findMetric(tb, name, label, value).GetCounter().GetValue()
}

// gaugeValue reads one gauge, as counterValue reads a counter.
func gaugeValue(tb testing.TB, name, label, value string) float64 {
	tb.Helper()
	return findMetric(tb, name, label, value).GetGauge().GetValue()
}

// findMetric is the series of name with the label set to value, or nil.
func findMetric(tb testing.TB, name, label, value string) *dto.Metric {
	tb.Helper()
	families, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		tb.Fatalf("gathering metrics: %v", err)
	}
	for _, mf := range families {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == label && l.GetValue() == value {
					return m
				}
			}
		}
	}
	return nil
}

// decodeNode decodes as the apiserver does: case-sensitive field names, unknown fields
// dropped, kind defaulted to Node.
func decodeNode(data []byte) (*corev1.Node, error) {
	n := &corev1.Node{}
	if err := runtime.DecodeInto(serializer.NewCodecFactory(Scheme()).UniversalDeserializer(), data, n); err != nil {
		return nil, err
	}
	return n, nil
}

func mustJSON(tb testing.TB, v any) []byte {
	tb.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// newNodeWebhook returns the webhook with panic recovery off, so that a panic in the handler
// fails the test instead of turning into a 500 response.
func newNodeWebhook(cfg *config.Config) *admission.Webhook {
	wh := NewNodeWebhook(Scheme(), cfg)
	wh.RecoverPanic = ptr.To(false)
	return wh
}

// applyPatch applies the response's JSON patch to raw and decodes the result.
func applyPatch(tb testing.TB, raw []byte, resp admission.Response) *corev1.Node {
	tb.Helper()
	if resp.PatchType == nil || *resp.PatchType != admissionv1.PatchTypeJSONPatch {
		tb.Fatalf("patch type = %v, want JSONPatch", resp.PatchType)
	}
	p, err := jsonpatch.DecodePatch(mustJSON(tb, resp.Patches))
	if err != nil {
		tb.Fatalf("decoding patch: %v", err)
	}
	out, err := p.Apply(raw)
	if err != nil {
		tb.Fatalf("applying patch %s to %s: %v", mustJSON(tb, resp.Patches), raw, err)
	}
	// resp.Patch, the bytes the apiserver receives, must be the same patch.
	if len(resp.Patch) == 0 {
		tb.Fatalf("response carries no serialized patch")
	}
	p2, err := jsonpatch.DecodePatch(resp.Patch)
	if err != nil {
		tb.Fatalf("decoding serialized patch: %v", err)
	}
	out2, err := p2.Apply(raw)
	if err != nil || !jsonpatch.Equal(out, out2) {
		tb.Fatalf("serialized patch gives %s (%v), want %s", out2, err, out)
	}
	n, err := decodeNode(out)
	if err != nil {
		tb.Fatalf("decoding patched node %s: %v", out, err)
	}
	return n
}

func TestNodeWebhook(t *testing.T) {
	cfg := testobj.ValidConfig(t, nil)
	wh := newNodeWebhook(cfg)
	otherValue := corev1.Taint{Key: config.DefaultTaintKey, Value: "true", Effect: corev1.TaintEffectNoSchedule}
	tests := []struct {
		name      string
		node      *corev1.Node
		op        admissionv1.Operation
		wantPatch bool
		want      []corev1.Taint // taints after the patch, if wantPatch
		result    string         // webhook metric label
	}{
		{
			name:      "no taints",
			node:      testobj.Node("n1", t0),
			wantPatch: true,
			want:      []corev1.Taint{gateTaint},
			result:    resultTainted,
		},
		{
			name:      "other taints kept, gate taint appended",
			node:      testobj.Node("n1", t0, testobj.Taints(notReadyTaint, gpuTaint)),
			wantPatch: true,
			want:      []corev1.Taint{notReadyTaint, gpuTaint, gateTaint},
			result:    resultTainted,
		},
		{
			name:      "same key under another effect does not count",
			node:      testobj.Node("n1", t0, testobj.Taints(corev1.Taint{Key: config.DefaultTaintKey, Effect: corev1.TaintEffectNoExecute})),
			wantPatch: true,
			want:      []corev1.Taint{{Key: config.DefaultTaintKey, Effect: corev1.TaintEffectNoExecute}, gateTaint},
			result:    resultTainted,
		},
		{
			name:   "gate taint already present",
			node:   testobj.Node("n1", t0, testobj.Taints(notReadyTaint, gateTaint)),
			result: resultPresent,
		},
		{
			name:   "gate taint registered by kubelet or Karpenter with another value",
			node:   testobj.Node("n1", t0, testobj.Taints(otherValue)),
			result: resultPresent,
		},
		{
			name:   "AKS system pool node excluded",
			node:   testobj.Node("n1", t0, testobj.NodeLabel("kubernetes.azure.com/mode", "system")),
			result: resultExcluded,
		},
		{
			name:   "control-plane node excluded",
			node:   testobj.Node("n1", t0, testobj.NodeLabel("node-role.kubernetes.io/control-plane", "")),
			result: resultExcluded,
		},
		{
			name:      "AKS user pool node gated",
			node:      testobj.Node("n1", t0, testobj.NodeLabel("kubernetes.azure.com/mode", "user")),
			wantPatch: true,
			want:      []corev1.Taint{gateTaint},
			result:    resultTainted,
		},
		{
			name:   "already released node",
			node:   testobj.Node("n1", t0, testobj.NodeAnnotation(config.DefaultCompletedAnnotation, "1700000000")),
			result: resultReleased,
		},
		{
			name:   "UPDATE is not mutated",
			node:   testobj.Node("n1", t0),
			op:     admissionv1.Update,
			result: resultExcluded,
		},
		{
			name: "DELETE is not mutated",
			node: testobj.Node("n1", t0),
			op:   admissionv1.Delete,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			raw := mustJSON(t, tc.node)
			op := tc.op
			if op == "" {
				op = admissionv1.Create
			}
			var before float64
			if tc.result != "" {
				before = counterValue(t, "startupgate_webhook_requests_total", "result", tc.result)
			}
			resp := wh.Handle(context.Background(), admissionRequest(nodeKind, op, raw))
			if !resp.Allowed {
				t.Fatalf("Handle() denied: %+v", resp.Result)
			}
			if resp.UID != "0f3c7e1e-1b7a-4c7e-9a57-2b1e8f6d0c11" {
				t.Errorf("response UID = %q, want the request's", resp.UID)
			}
			if tc.result != "" {
				if d := counterValue(t, "startupgate_webhook_requests_total", "result", tc.result) - before; d != 1 {
					t.Errorf("webhook requests{result=%q} grew by %v, want 1", tc.result, d)
				}
			}
			if !tc.wantPatch {
				if len(resp.Patches) != 0 || resp.PatchType != nil {
					t.Fatalf("Handle() patched: %s", mustJSON(t, resp.Patches))
				}
				return
			}
			got := applyPatch(t, raw, resp)
			if diff := cmp.Diff(tc.want, got.Spec.Taints); diff != "" {
				t.Errorf("patched taints mismatch (-want +got):\n%s", diff)
			}
			// Idempotence: the handler applied to its own output adds nothing.
			again := wh.Handle(context.Background(), admissionRequest(nodeKind, admissionv1.Create, mustJSON(t, got)))

			// The patch touches the taints and their marks, and nothing else.
			rest := got.DeepCopy()
			rest.Spec.Taints = tc.node.Spec.Taints
			for k := range rest.Annotations {
				if _, before := tc.node.Annotations[k]; !before && strings.HasPrefix(k, rule.DefaultPlacedAnnotation+".") {
					delete(rest.Annotations, k)
				}
			}
			if len(rest.Annotations) == 0 && tc.node.Annotations == nil {
				rest.Annotations = nil
			}
			if diff := cmp.Diff(tc.node, rest); diff != "" {
				t.Errorf("patch changed more than the taints and their marks (-want +got):\n%s", diff)
			}
			p, err := jsonpatch.DecodePatch(mustJSON(t, resp.Patches))
			if err != nil {
				t.Fatal(err)
			}
			out, err := p.Apply(raw)
			if err != nil {
				t.Fatal(err)
			}
			again2 := wh.Handle(context.Background(), admissionRequest(nodeKind, admissionv1.Create, out))
			for _, r := range []admission.Response{again, again2} {
				if !r.Allowed || len(r.Patches) != 0 {
					t.Errorf("second Handle() = allowed %v, patches %s; want allowed, no patch", r.Allowed, mustJSON(t, r.Patches))
				}
			}
		})
	}
}

// TestNodeWebhookRawAsAPIServerSends uses the exact JSON shape an apiserver sends for a
// kubelet-registered node (null creationTimestamp, status, taints from --register-with-taints).
func TestNodeWebhookRawAsAPIServerSends(t *testing.T) {
	cfg := testobj.ValidConfig(t, nil)
	raw := []byte(`{"kind":"Node","apiVersion":"v1","metadata":{"name":"aks-user-1","creationTimestamp":null,
"labels":{"kubernetes.io/hostname":"aks-user-1","kubernetes.azure.com/mode":"user"},
"annotations":{"volumes.kubernetes.io/controller-managed-attach-detach":"true"}},
"spec":{"podCIDR":"10.244.3.0/24","taints":[{"key":"node.kubernetes.io/not-ready","effect":"NoSchedule"}]},
"status":{"capacity":{"cpu":"4","memory":"16Gi"},"daemonEndpoints":{"kubeletEndpoint":{"Port":10250}},"conditions":[{"type":"Ready","status":"False","lastHeartbeatTime":"2026-03-01T12:00:00Z","lastTransitionTime":"2026-03-01T12:00:00Z","reason":"KubeletNotReady"}],
"nodeInfo":{"machineID":"","systemUUID":"","bootID":"","kernelVersion":"","osImage":"","containerRuntimeVersion":"","kubeletVersion":"v1.36.0","kubeProxyVersion":"","operatingSystem":"linux","architecture":"amd64"}}}`)
	resp := newNodeWebhook(cfg).Handle(context.Background(), admissionRequest(nodeKind, admissionv1.Create, raw))
	if !resp.Allowed {
		t.Fatalf("Handle() denied: %+v", resp.Result)
	}
	for _, p := range resp.Patches {
		if p.Operation == "remove" {
			t.Errorf("patch removes %s: it must only add the taint", p.Path)
		}
	}
	if len(resp.Patches) != 2 {
		t.Errorf("got %d patch operations %s, want 2: the taint and its mark", len(resp.Patches), mustJSON(t, resp.Patches))
	}
	got := applyPatch(t, raw, resp)
	if diff := cmp.Diff([]corev1.Taint{notReadyTaint, gateTaint}, got.Spec.Taints); diff != "" {
		t.Errorf("patched taints mismatch (-want +got):\n%s", diff)
	}
}

func TestNodeWebhookCustomTaint(t *testing.T) {
	cfg := testobj.ValidConfig(t, func(c *config.Config) {
		c.Taint = corev1.Taint{Key: config.AutoscalerTaintPrefix + "init", Effect: corev1.TaintEffectNoExecute}
		c.NodeSelector = "pool=gpu"
	})
	wh := newNodeWebhook(cfg)
	raw := mustJSON(t, testobj.Node("n1", t0, testobj.NodeLabel("pool", "gpu"), testobj.Taints(gateTaint)))
	resp := wh.Handle(context.Background(), admissionRequest(nodeKind, admissionv1.Create, raw))
	got := applyPatch(t, raw, resp)
	want := []corev1.Taint{gateTaint, {Key: config.AutoscalerTaintPrefix + "init", Effect: corev1.TaintEffectNoExecute}}
	if diff := cmp.Diff(want, got.Spec.Taints); diff != "" {
		t.Errorf("patched taints mismatch (-want +got):\n%s", diff)
	}
	// Not selected by the custom node selector.
	resp = wh.Handle(context.Background(), admissionRequest(nodeKind, admissionv1.Create, mustJSON(t, testobj.Node("n2", t0))))
	if !resp.Allowed || len(resp.Patches) != 0 {
		t.Errorf("unselected node: allowed %v, patches %s; want allowed, no patch", resp.Allowed, mustJSON(t, resp.Patches))
	}
}

func TestNodeWebhookRejects(t *testing.T) {
	cfg := testobj.ValidConfig(t, nil)
	wh := newNodeWebhook(cfg)
	pod := testobj.Pod("p", "n1", t0)
	podNoType := pod.DeepCopy()
	podNoType.TypeMeta = metav1.TypeMeta{}
	tests := []struct {
		name    string
		kind    metav1.GroupVersionKind
		raw     []byte
		message string // substring of the result message
	}{
		{"Pod kind and Pod object", metav1.GroupVersionKind{Version: "v1", Kind: "Pod"}, mustJSON(t, pod), "Node"},
		{"Pod kind, object without type meta", metav1.GroupVersionKind{Version: "v1", Kind: "Pod"}, mustJSON(t, podNoType), "Node"},
		{"Pod kind, Node object", metav1.GroupVersionKind{Version: "v1", Kind: "Pod"}, mustJSON(t, testobj.Node("n1", t0)), "Node"},
		{"Node kind in another group", metav1.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Node"}, mustJSON(t, testobj.Node("n1", t0)), "Node"},
		{"malformed JSON", nodeKind, []byte(`{"kind":"Node","apiVersion":"v1","metadata":{"name":`), ""},
		{"wrong field type", nodeKind, []byte(`{"kind":"Node","apiVersion":"v1","spec":{"taints":"all"}}`), ""},
		{"no object", nodeKind, nil, "no content"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			resp := wh.Handle(context.Background(), admissionRequest(tc.kind, admissionv1.Create, tc.raw))
			if resp.Allowed {
				t.Fatalf("Handle() allowed, patches %s; want a rejection", mustJSON(t, resp.Patches))
			}
			if resp.Result == nil || resp.Result.Code != http.StatusBadRequest {
				t.Fatalf("Handle() result = %+v, want code 400", resp.Result)
			}
			if resp.Result.Message == "" || !strings.Contains(resp.Result.Message, tc.message) {
				t.Errorf("Handle() message = %q, want one containing %q", resp.Result.Message, tc.message)
			}
			if len(resp.Patches) != 0 {
				t.Errorf("rejection carries patches %s", mustJSON(t, resp.Patches))
			}
		})
	}
}

func TestNodeWebhookServeHTTP(t *testing.T) {
	cfg := testobj.ValidConfig(t, nil)
	wh := newNodeWebhook(cfg)
	review := func(raw []byte) []byte {
		req := admissionRequest(nodeKind, admissionv1.Create, raw)
		ar := admissionv1.AdmissionReview{
			TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
			Request:  &req.AdmissionRequest,
		}
		return mustJSON(t, ar)
	}
	tests := []struct {
		name        string
		body        []byte // nil: no body at all
		contentType string
		wantAllowed bool
		wantCode    int32
		wantMessage string
		wantPatch   bool
	}{
		{name: "valid review", body: review(mustJSON(t, testobj.Node("n1", t0))), contentType: "application/json", wantAllowed: true, wantPatch: true},
		{name: "garbage bytes", body: []byte("\x00\xffnot an admission review"), contentType: "application/json", wantCode: 400, wantMessage: ""},
		{name: "JSON that is not an AdmissionReview", body: []byte(`{"kind":"Node","apiVersion":"v1"}`), contentType: "application/json", wantCode: 400},
		{name: "empty body", body: []byte{}, contentType: "application/json", wantCode: 400},
		{name: "no body", body: nil, contentType: "application/json", wantCode: 400, wantMessage: "empty"},
		{name: "wrong content type", body: review(mustJSON(t, testobj.Node("n1", t0))), contentType: "text/plain", wantCode: 400, wantMessage: "contentType"},
		{name: "review of a malformed node", body: review([]byte(`{"kind":"Node","apiVersion":"v1","metadata":[]}`)), contentType: "application/json", wantCode: 400},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var req *http.Request
			if tc.body == nil {
				req = httptest.NewRequest(http.MethodPost, NodeWebhookPath, nil)
			} else {
				req = httptest.NewRequest(http.MethodPost, NodeWebhookPath, bytes.NewReader(tc.body))
			}
			req.Header.Set("Content-Type", tc.contentType)
			rec := httptest.NewRecorder()
			wh.ServeHTTP(rec, req)

			if rec.Code != http.StatusOK {
				t.Fatalf("HTTP status = %d, want 200 (errors travel in the AdmissionReview)", rec.Code)
			}
			var got admissionv1.AdmissionReview
			if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
				t.Fatalf("response %q is not an AdmissionReview: %v", rec.Body.String(), err)
			}
			if got.Response == nil {
				t.Fatalf("response has no AdmissionResponse: %s", rec.Body.String())
			}
			if got.Response.Allowed != tc.wantAllowed {
				t.Errorf("allowed = %v, want %v (%+v)", got.Response.Allowed, tc.wantAllowed, got.Response.Result)
			}
			if tc.wantAllowed {
				if tc.wantPatch && len(got.Response.Patch) == 0 {
					t.Errorf("no patch in %s", rec.Body.String())
				}
				return
			}
			if got.Response.Result == nil || got.Response.Result.Code != tc.wantCode {
				t.Fatalf("result = %+v, want code %d", got.Response.Result, tc.wantCode)
			}
			if msg := got.Response.Result.Message; msg == "" || !strings.Contains(msg, tc.wantMessage) {
				t.Errorf("message = %q, want a clear error containing %q", msg, tc.wantMessage)
			}
		})
	}
}

func FuzzNodeWebhook(f *testing.F) {
	seeds := []any{
		testobj.Node("n1", t0),
		testobj.Node("n1", t0, testobj.Taints(notReadyTaint)),
		testobj.Node("n1", t0, testobj.Taints(gateTaint)),
		testobj.Node("n1", t0, testobj.Taints(corev1.Taint{Key: config.DefaultTaintKey, Effect: corev1.TaintEffectNoExecute})),
		testobj.Node("n1", t0, testobj.NodeLabel("kubernetes.azure.com/mode", "system")),
		testobj.Node("n1", t0, testobj.NodeAnnotation(config.DefaultCompletedAnnotation, "1")),
		testobj.Pod("p", "n1", t0),
	}
	for _, s := range seeds {
		f.Add(mustJSON(f, s))
	}
	for _, s := range []string{
		``, `{}`, `null`, `[]`, `"Node"`, `{"kind":"Node"}`, `{"kind":"Node","apiVersion":"v1"}`,
		`{"kind":"Node","apiVersion":"v1","spec":{"taints":null}}`,
		`{"kind":"Node","apiVersion":"v1","spec":{"taints":[{}]}}`,
		`{"kind":"Node","apiVersion":"v1","spec":{"taints":[{"key":"startup.k8s.io/initializing","effect":"NoSchedule"},{"key":"startup.k8s.io/initializing","effect":"NoSchedule"}]}}`,
		`{"kind":"Node","apiVersion":"v1","metadata":{"labels":{"node-role.kubernetes.io/control-plane":"x"}}}`,
		`{"kind":"Node","apiVersion":"v1","metadata":{"name":"a","name":"b"}}`,
		`{"kind":"Node","apiVersion":"v1","metadata":`,
		`kind: Node`,
		// Found by fuzzing: field names differ only in case (the apiserver's decoder is
		// case-sensitive, encoding/json is not).
		`{"metAdAtA":{"000":"0000","lABels":{"":{}}}}`,
	} {
		f.Add([]byte(s))
	}
	cfg := testobj.ValidConfig(f, nil)
	wh := newNodeWebhook(cfg)
	f.Fuzz(func(t *testing.T, raw []byte) {
		resp := wh.Handle(context.Background(), admissionRequest(nodeKind, admissionv1.Create, raw))
		if len(resp.Patches) == 0 {
			return
		}
		if !resp.Allowed {
			t.Fatalf("denied response carries a patch")
		}
		p, err := jsonpatch.DecodePatch(mustJSON(t, resp.Patches))
		if err != nil {
			t.Fatalf("decoding patch: %v", err)
		}
		out, err := p.Apply(raw)
		if err != nil {
			t.Fatalf("patch %s does not apply to its own input %q: %v", mustJSON(t, resp.Patches), raw, err)
		}
		n, err := decodeNode(out)
		if err != nil {
			t.Fatalf("patched object %s is not a node: %v", out, err)
		}
		gate := 0
		for _, tn := range n.Spec.Taints {
			if tn.Key == cfg.Taint.Key && tn.Effect == cfg.Taint.Effect {
				gate++
			}
		}
		if gate != 1 {
			t.Fatalf("patched node has %d gate taints, want 1: %v (input %q)", gate, n.Spec.Taints, raw)
		}
		if cfg.Released(n) || !cfg.Gated(n) {
			t.Fatalf("patched a released or excluded node: %s", out)
		}
	})
}

func BenchmarkNodeWebhook(b *testing.B) {
	cfg := testobj.ValidConfig(b, nil)
	wh := NewNodeWebhook(Scheme(), cfg)
	node := testobj.Node("aks-nodepool1-12345678-vmss000042", t0,
		testobj.Taints(notReadyTaint),
		testobj.NodeLabel("kubernetes.azure.com/mode", "user"),
		testobj.NodeLabel("topology.kubernetes.io/zone", "westeurope-1"),
		testobj.NodeLabel("node.kubernetes.io/instance-type", "Standard_D4s_v5"),
		testobj.NodeCondition(corev1.NodeReady, corev1.ConditionFalse))
	node.Status.Capacity = corev1.ResourceList{}
	req := admissionRequest(nodeKind, admissionv1.Create, mustJSON(b, node))
	ctx := context.Background()
	if resp := wh.Handle(ctx, req); len(resp.Patches) != 1 {
		b.Fatalf("Handle() patches = %v, want 1", resp.Patches)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		wh.Handle(ctx, req)
	}
}
