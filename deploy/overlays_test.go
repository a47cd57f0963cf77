package deploy_test

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/startupgate/startupgate/gate"
	"github.com/startupgate/startupgate/gate/config"
	"github.com/startupgate/startupgate/gate/policy"
)

// What the rendered overlays must contain.

func TestOverlaysRender(t *testing.T) {
	cfg := defaultConfig(t)
	wantSelector, err := policy.ObjectSelector(&cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, overlay := range overlays {
		t.Run(overlay, func(t *testing.T) {
			objs := render(t, filepath.Join("overlays", overlay))
			webhookMode := overlay != "policy"

			checkIdentity(t, objs)

			d := mustGet[appsv1.Deployment](t, objs, "Deployment", "startupgate")
			checkDeployment(t, d, &cfg, webhookMode)
			podLabels := d.Spec.Template.Labels

			pdb := mustGet[policyv1.PodDisruptionBudget](t, objs, "PodDisruptionBudget", "startupgate")
			checkSelects(t, "PodDisruptionBudget", pdb.Spec.Selector.MatchLabels, podLabels)
			if pdb.Spec.MinAvailable == nil || pdb.Spec.MinAvailable.IntValue() < 1 || int32(pdb.Spec.MinAvailable.IntValue()) >= *d.Spec.Replicas {
				t.Errorf("PDB minAvailable = %v: want at least 1 and fewer than the %d replicas (so a drain can proceed)", pdb.Spec.MinAvailable, *d.Spec.Replicas)
			}

			metrics := mustGet[corev1.Service](t, objs, "Service", "startupgate-metrics")
			checkSelects(t, "metrics Service", metrics.Spec.Selector, podLabels)
			checkServicePort(t, metrics, d, "--metrics-bind-address=:")

			mwc := find(objs, "MutatingWebhookConfiguration", "startupgate")
			webhookSvc := find(objs, "Service", "startupgate-webhook")
			if !webhookMode {
				if mwc != nil || webhookSvc != nil {
					t.Errorf("policy overlay still renders the webhook configuration (%v) or its Service (%v)", mwc != nil, webhookSvc != nil)
				}
				if len(ofKind(objs, "MutatingWebhookConfiguration")) != 0 {
					t.Errorf("policy overlay renders a MutatingWebhookConfiguration")
				}
				return
			}
			svc := typed[corev1.Service](t, webhookSvc)
			checkSelects(t, "webhook Service", svc.Spec.Selector, podLabels)
			checkServicePort(t, svc, d, "--webhook-port=")
			if mwc == nil {
				t.Fatalf("no MutatingWebhookConfiguration startupgate")
			}
			wh := typed[admissionregistrationv1.MutatingWebhookConfiguration](t, mwc)
			checkNodeWebhook(t, wh, svc, wantSelector)
			checkOverlayExtras(t, overlay, objs, d, svc, wh)
		})
	}
}

// checkIdentity: the gate's Namespace, ServiceAccount and the roles bound to it, all in the
// gate's Namespace.
func checkIdentity(t *testing.T, objs []*unstructured.Unstructured) {
	t.Helper()
	mustGet[corev1.Namespace](t, objs, "Namespace", gateNamespace)
	sa := mustGet[corev1.ServiceAccount](t, objs, "ServiceAccount", gateSA)
	if sa.Namespace != gateNamespace {
		t.Errorf("ServiceAccount namespace = %q, want %q", sa.Namespace, gateNamespace)
	}
	mustGet[rbacv1.ClusterRole](t, objs, "ClusterRole", "startupgate")
	crb := mustGet[rbacv1.ClusterRoleBinding](t, objs, "ClusterRoleBinding", "startupgate")
	checkBinding(t, crb.RoleRef, crb.Subjects, "ClusterRole", "startupgate")
	role := mustGet[rbacv1.Role](t, objs, "Role", "startupgate-leader-election")
	if role.Namespace != gateNamespace {
		t.Errorf("leader-election Role namespace = %q, want %q", role.Namespace, gateNamespace)
	}
	rb := mustGet[rbacv1.RoleBinding](t, objs, "RoleBinding", "startupgate-leader-election")
	checkBinding(t, rb.RoleRef, rb.Subjects, "Role", "startupgate-leader-election")
}

// checkNodeWebhook: the one Node webhook fails closed, selects what policy.ObjectSelector
// selects, intercepts only CREATE and leaves caBundle to whoever injects it.
func checkNodeWebhook(t *testing.T, wh *admissionregistrationv1.MutatingWebhookConfiguration, svc *corev1.Service, wantSelector *metav1.LabelSelector) {
	t.Helper()
	if len(wh.Webhooks) != 1 {
		t.Fatalf("MutatingWebhookConfiguration has %d webhooks, want 1", len(wh.Webhooks))
	}
	w := wh.Webhooks[0]
	checkWebhookCommon(t, w.Name, w.ClientConfig, w.SideEffects, w.TimeoutSeconds, gate.NodeWebhookPath, svc)
	if w.FailurePolicy == nil || *w.FailurePolicy != admissionregistrationv1.Fail {
		t.Errorf("node webhook failurePolicy = %v, want Fail", w.FailurePolicy)
	}
	if diff := cmp.Diff(wantSelector, w.ObjectSelector, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("node webhook objectSelector differs from policy.ObjectSelector(config.DefaultConfig()) (-want +got):\n%s", diff)
	}
	if len(w.ClientConfig.CABundle) != 0 {
		t.Errorf("the manifests must never set caBundle (re-applying would clear the injected one)")
	}
	wantRules := []admissionregistrationv1.RuleWithOperations{{
		Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
		Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"nodes"}, Scope: ptrTo(admissionregistrationv1.AllScopes)},
	}}
	if diff := cmp.Diff(wantRules, w.Rules); diff != "" {
		t.Errorf("node webhook rules (-want +got):\n%s", diff)
	}
}

// checkOverlayExtras checks what one webhook overlay adds to the base: where its serving
// certificate comes from, or the pod guard.
func checkOverlayExtras(t *testing.T, overlay string, objs []*unstructured.Unstructured, d *appsv1.Deployment, svc *corev1.Service,
	wh *admissionregistrationv1.MutatingWebhookConfiguration) {
	t.Helper()
	switch overlay {
	case "self-signed":
		if len(ofKind(objs, "Secret")) != 0 {
			t.Errorf("self-signed overlay must not ship a Secret: generate-certs.sh creates it")
		}
	case "cert-manager":
		cert := find(objs, "Certificate", "startupgate-webhook")
		issuer := find(objs, "Issuer", "startupgate-selfsigned")
		if cert == nil || issuer == nil {
			t.Fatalf("cert-manager overlay: Certificate (%v) or Issuer (%v) missing", cert != nil, issuer != nil)
		}
		secret, _, _ := unstructured.NestedString(cert.Object, "spec", "secretName")
		if want := certSecretName(t, d); secret != want {
			t.Errorf("Certificate secretName = %q, but the Deployment mounts %q", secret, want)
		}
		dns, _, _ := unstructured.NestedStringSlice(cert.Object, "spec", "dnsNames")
		if fqdn := svc.Name + "." + svc.Namespace + ".svc"; !slices.Contains(dns, fqdn) {
			t.Errorf("Certificate dnsNames %v lack the Service name the apiserver dials, %s", dns, fqdn)
		}
		if got, want := wh.Annotations["cert-manager.io/inject-ca-from"], gateNamespace+"/"+cert.GetName(); got != want {
			t.Errorf("webhook inject-ca-from = %q, want %q", got, want)
		}
	case "pod-guard":
		vwc := find(objs, "ValidatingWebhookConfiguration", "startupgate-pod-guard")
		if vwc == nil {
			t.Fatalf("pod-guard overlay renders no ValidatingWebhookConfiguration startupgate-pod-guard")
		}
		v := typed[admissionregistrationv1.ValidatingWebhookConfiguration](t, vwc)
		args := d.Spec.Template.Spec.Containers[0].Args
		for _, pw := range v.Webhooks {
			checkWebhookCommon(t, pw.Name, pw.ClientConfig, pw.SideEffects, pw.TimeoutSeconds, gate.PodGuardPath, svc)
			if pw.FailurePolicy == nil || *pw.FailurePolicy != admissionregistrationv1.Ignore {
				t.Errorf("pod guard failurePolicy = %v, want Ignore (a guard that fails closed blocks every Pod)", pw.FailurePolicy)
			}
			// The guard answers within the webhook's timeout only if it is told it.
			if pw.TimeoutSeconds != nil && !slices.Contains(args, fmt.Sprintf("--pod-guard-timeout=%ds", *pw.TimeoutSeconds)) {
				t.Errorf("pod-guard overlay: Deployment args %v lack --pod-guard-timeout=%ds, the webhook's timeoutSeconds", args, *pw.TimeoutSeconds)
			}
		}
		if !slices.Contains(args, "--pod-guard=true") {
			t.Errorf("pod-guard overlay: Deployment args %v lack --pod-guard=true", args)
		}
	}
}

// TestReplaceOverlay: overlays/replace is the self-signed install and the grants of
// timeoutPolicy replace, bound to the gate's ServiceAccount, and nothing else. (It is not
// among the overlays every install test pairs with a chart install: the chart renders the
// grants from its config, which TestReplaceGrants in deploy/helm checks against this file.)
func TestReplaceOverlay(t *testing.T) {
	objs := render(t, filepath.Join("overlays", "replace"))
	role := mustGet[rbacv1.ClusterRole](t, objs, "ClusterRole", "startupgate-replace")
	b := mustGet[rbacv1.ClusterRoleBinding](t, objs, "ClusterRoleBinding", "startupgate-replace")
	checkBinding(t, b.RoleRef, b.Subjects, "ClusterRole", role.Name)
	if got, want := len(objs), len(render(t, filepath.Join("overlays", "self-signed")))+2; got != want {
		t.Errorf("overlays/replace renders %d objects, want self-signed's and the two of replace (%d)", got, want)
	}
}

func ptrTo[T any](v T) *T { return &v }

func checkBinding(t *testing.T, ref rbacv1.RoleRef, subjects []rbacv1.Subject, kind, name string) {
	t.Helper()
	if ref.Kind != kind || ref.Name != name || ref.APIGroup != rbacv1.GroupName {
		t.Errorf("binding roleRef = %+v, want %s %s", ref, kind, name)
	}
	want := []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: gateSA, Namespace: gateNamespace}}
	if diff := cmp.Diff(want, subjects); diff != "" {
		t.Errorf("binding of %s %s: subjects (-want +got):\n%s", kind, name, diff)
	}
}

func checkSelects(t *testing.T, what string, selector, podLabels map[string]string) {
	t.Helper()
	if len(selector) == 0 {
		t.Errorf("%s has an empty selector", what)
	}
	for k, v := range selector {
		if podLabels[k] != v {
			t.Errorf("%s selector %s=%s does not match the gate Pods' labels %v", what, k, v, podLabels)
		}
	}
}

// checkServicePort: the Service's targetPort is the port the container's flag binds.
func checkServicePort(t *testing.T, svc *corev1.Service, d *appsv1.Deployment, flagPrefix string) {
	t.Helper()
	port := ""
	for _, a := range d.Spec.Template.Spec.Containers[0].Args {
		if strings.HasPrefix(a, flagPrefix) {
			port = strings.TrimPrefix(a, flagPrefix)
		}
	}
	if port == "" {
		t.Errorf("Deployment args lack %s...", flagPrefix)
		return
	}
	if len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].TargetPort.String() != port {
		t.Errorf("Service %s ports %v: want one port with targetPort %s (%sPORT)", svc.Name, svc.Spec.Ports, port, flagPrefix)
	}
}

func checkWebhookCommon(t *testing.T, name string, cc admissionregistrationv1.WebhookClientConfig, side *admissionregistrationv1.SideEffectClass,
	timeout *int32, path string, svc *corev1.Service) {
	t.Helper()
	if side == nil || *side != admissionregistrationv1.SideEffectClassNone {
		t.Errorf("webhook %s sideEffects = %v, want None", name, side)
	}
	if timeout == nil || *timeout > 10 || *timeout < 1 {
		t.Errorf("webhook %s timeoutSeconds = %v, want 1..10", name, timeout)
	}
	s := cc.Service
	if s == nil || s.Name != svc.Name || s.Namespace != svc.Namespace || s.Path == nil || *s.Path != path ||
		s.Port == nil || *s.Port != svc.Spec.Ports[0].Port {
		t.Errorf("webhook %s clientConfig.service = %+v, want %s/%s:%d%s", name, s, svc.Namespace, svc.Name, svc.Spec.Ports[0].Port, path)
	}
}

func certSecretName(t *testing.T, d *appsv1.Deployment) string {
	t.Helper()
	for _, v := range d.Spec.Template.Spec.Volumes {
		if v.Secret != nil {
			return v.Secret.SecretName
		}
	}
	t.Errorf("Deployment mounts no Secret")
	return ""
}

func checkDeployment(t *testing.T, d *appsv1.Deployment, cfg *config.Config, webhookMode bool) {
	t.Helper()
	if d.Namespace != gateNamespace {
		t.Errorf("Deployment namespace = %q", d.Namespace)
	}
	if d.Spec.Replicas == nil || *d.Spec.Replicas != 2 {
		t.Errorf("replicas = %v, want 2", d.Spec.Replicas)
	}
	ps := d.Spec.Template.Spec
	if ps.ServiceAccountName != gateSA {
		t.Errorf("serviceAccountName = %q, want %q", ps.ServiceAccountName, gateSA)
	}
	if ps.PriorityClassName != "system-cluster-critical" {
		t.Errorf("priorityClassName = %q, want system-cluster-critical", ps.PriorityClassName)
	}
	// No deadlock: the gate's own Pods must be able to land on a gated node.
	if !cfg.Tolerates(ps.Tolerations) {
		t.Errorf("tolerations %v do not tolerate the startup taint %s", ps.Tolerations, cfg.Taint.ToString())
	}
	// Run only on the nodes the gate never gates (with failurePolicy Fail, a gate whose
	// Pods were all on gated nodes, and all gone, could not come back): each term of the
	// required node affinity selects such nodes only.
	var terms []corev1.NodeSelectorTerm
	if a := ps.Affinity; a != nil && a.NodeAffinity != nil && a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil {
		terms = a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
	}
	if len(terms) == 0 {
		t.Error("no required node affinity to the nodes the gate skips")
	}
	for _, term := range terms {
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{}}}
		for _, e := range term.MatchExpressions {
			switch e.Operator {
			case corev1.NodeSelectorOpIn:
				node.Labels[e.Key] = e.Values[0]
			case corev1.NodeSelectorOpExists:
				node.Labels[e.Key] = ""
			}
		}
		if cfg.Gated(node) {
			t.Errorf("the node affinity's term %v selects nodes the gate gates (labels %v)", term.MatchExpressions, node.Labels)
		}
	}
	checkSecurity(t, ps)
	checkContainerWiring(t, ps.Containers[0], webhookMode)
}

// checkSecurity: the Pod runs one container as non-root, read-only, with no privilege to
// gain, no capabilities, the runtime's seccomp profile and resource requests.
func checkSecurity(t *testing.T, ps corev1.PodSpec) {
	t.Helper()
	if ps.SecurityContext == nil || ps.SecurityContext.RunAsNonRoot == nil || !*ps.SecurityContext.RunAsNonRoot {
		t.Errorf("pod securityContext.runAsNonRoot must be true")
	}
	if len(ps.Containers) != 1 {
		t.Fatalf("want one container, got %d", len(ps.Containers))
	}
	c := ps.Containers[0]
	sc := c.SecurityContext
	if sc == nil {
		t.Fatalf("container has no securityContext")
	}
	if sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
		t.Errorf("readOnlyRootFilesystem must be true")
	}
	if sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
		t.Errorf("allowPrivilegeEscalation must be false")
	}
	if sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) || len(sc.Capabilities.Add) != 0 {
		t.Errorf("capabilities = %+v, want drop [ALL] and no add", sc.Capabilities)
	}
	seccomp := sc.SeccompProfile
	if seccomp == nil {
		seccomp = ps.SecurityContext.SeccompProfile
	}
	if seccomp == nil || seccomp.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("seccompProfile = %v, want RuntimeDefault", seccomp)
	}
	if c.Resources.Requests.Cpu().IsZero() || c.Resources.Requests.Memory().IsZero() {
		t.Errorf("resource requests = %v, want cpu and memory", c.Resources.Requests)
	}
}

// checkContainerWiring: the container elects a leader, its probes are on its health port,
// and it serves and mounts the webhook exactly when the overlay is a webhook one.
func checkContainerWiring(t *testing.T, c corev1.Container, webhookMode bool) {
	t.Helper()
	if !slices.Contains(c.Args, "--leader-elect=true") {
		t.Errorf("args %v lack --leader-elect=true", c.Args)
	}
	probePort := ""
	for _, a := range c.Args {
		if p, ok := strings.CutPrefix(a, "--health-probe-bind-address=:"); ok {
			probePort = p
		}
	}
	probes := map[string]struct {
		p    *corev1.Probe
		path string
	}{"startup": {c.StartupProbe, "/healthz"}, "liveness": {c.LivenessProbe, "/healthz"}, "readiness": {c.ReadinessProbe, "/readyz"}}
	for kind, want := range probes {
		p := want.p
		if p == nil || p.HTTPGet == nil || p.HTTPGet.Path != want.path || p.HTTPGet.Port != intstr.Parse(probePort) {
			t.Errorf("%s probe = %+v, want httpGet %s on the health port %q", kind, p, want.path, probePort)
			continue
		}
		// The default 1 s counts a gate busy on a loaded node as failed, and restarts it.
		if p.TimeoutSeconds < 2 {
			t.Errorf("%s probe timeout = %ds, want more than the default 1 s", kind, p.TimeoutSeconds)
		}
	}
	env := map[string]string{}
	for _, e := range c.Env {
		env[e.Name] = e.Value
	}
	wantWebhook := map[bool]string{true: "1", false: "0"}[webhookMode]
	if env["STARTUP_WEBHOOK"] != wantWebhook {
		t.Errorf("STARTUP_WEBHOOK = %q, want %q", env["STARTUP_WEBHOOK"], wantWebhook)
	}
	mountsCerts := false
	for _, m := range c.VolumeMounts {
		mountsCerts = mountsCerts || m.MountPath == "/tmp/k8s-webhook-server/serving-certs"
	}
	if mountsCerts != webhookMode {
		t.Errorf("container mounts the webhook certificate: %v, want %v", mountsCerts, webhookMode)
	}
}

// TestNoRBACWildcards: no rule anywhere in what we ship uses "*".
func TestNoRBACWildcards(t *testing.T) {
	var all []*unstructured.Unstructured
	for _, overlay := range overlays {
		all = append(all, render(t, filepath.Join("overlays", overlay))...)
	}
	all = append(all, readManifests(t, "startup-daemonset.yaml")...)
	all = append(all, readManifests(t, "examples/workload.yaml")...)
	roles := 0
	for _, u := range all {
		var rules []rbacv1.PolicyRule
		switch u.GetKind() {
		case "ClusterRole":
			rules = typed[rbacv1.ClusterRole](t, u).Rules
		case "Role":
			rules = typed[rbacv1.Role](t, u).Rules
		default:
			continue
		}
		roles++
		for i, r := range rules {
			for field, vals := range map[string][]string{"verbs": r.Verbs, "resources": r.Resources, "apiGroups": r.APIGroups,
				"resourceNames": r.ResourceNames, "nonResourceURLs": r.NonResourceURLs} {
				for _, v := range vals {
					if strings.Contains(v, "*") {
						t.Errorf("%s %s rule %d: %s contains wildcard %q", u.GetKind(), u.GetName(), i, field, v)
					}
				}
			}
		}
	}
	if roles < 3 {
		t.Errorf("found %d roles; the wildcard check looked at nothing", roles)
	}
}

// TestConfigMapRollsDeployment: the gate's Config comes from a generated ConfigMap whose
// name carries a hash of its content; the Deployment mounts exactly that name and reads the
// file with --config, and the shipped file is a valid Config. A change of rules therefore
// changes the Pod template, and the Deployment rolls.
func TestConfigMapRollsDeployment(t *testing.T) {
	objs := render(t, "overlays/self-signed")
	cms := ofKind(objs, "ConfigMap")
	var cm *corev1.ConfigMap
	for _, u := range cms {
		if strings.HasPrefix(u.GetName(), "startupgate-config-") {
			cm = typed[corev1.ConfigMap](t, u)
		}
	}
	if cm == nil {
		t.Fatalf("no generated startupgate-config-<hash> ConfigMap among %d ConfigMaps", len(cms))
	}
	cfg, err := config.LoadConfig([]byte(cm.Data["config.yaml"]))
	if err == nil {
		err = cfg.Validate()
	}
	if err != nil {
		t.Fatalf("the shipped config.yaml: %v", err)
	}
	d := mustGet[appsv1.Deployment](t, objs, "Deployment", "startupgate")
	pod := d.Spec.Template.Spec
	mounted := ""
	for _, v := range pod.Volumes {
		if v.ConfigMap != nil && strings.HasPrefix(v.ConfigMap.Name, "startupgate-config") {
			mounted = v.ConfigMap.Name
		}
	}
	if mounted != cm.Name {
		t.Errorf("the Deployment mounts ConfigMap %q, want the generated %q (else a change would not roll it)", mounted, cm.Name)
	}
	if !slices.Contains(pod.Containers[0].Args, "--config=/etc/startupgate/config.yaml") {
		t.Errorf("args %v do not read the mounted config", pod.Containers[0].Args)
	}
}

// TestPolicyOverlayMatchesConfig: the shipped policy.yaml is what the default config.Config
// renders, so it cannot drift from the webhook's mutation.
func TestPolicyOverlayMatchesConfig(t *testing.T) {
	cfg := defaultConfig(t)
	want, err := policy.For(&cfg)
	if err != nil || len(want) != 1 {
		t.Fatalf("the default config renders %d policies (%v), want 1", len(want), err)
	}
	wantPolicy, wantBinding := want[0].Policy, want[0].Binding
	objs := render(t, "overlays/policy")
	policies := ofKind(objs, "MutatingAdmissionPolicy")
	bindings := ofKind(objs, "MutatingAdmissionPolicyBinding")
	if len(policies) != 1 || len(bindings) != 1 {
		t.Fatalf("policy overlay renders %d policies and %d bindings, want 1 and 1", len(policies), len(bindings))
	}
	gotPolicy := typed[admissionregistrationv1.MutatingAdmissionPolicy](t, policies[0])
	gotBinding := typed[admissionregistrationv1.MutatingAdmissionPolicyBinding](t, bindings[0])
	if gotPolicy.Name != wantPolicy.Name || gotBinding.Name != wantBinding.Name {
		t.Errorf("names: policy %q binding %q, want %q and %q", gotPolicy.Name, gotBinding.Name, wantPolicy.Name, wantBinding.Name)
	}
	if diff := cmp.Diff(wantPolicy.Spec, gotPolicy.Spec, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("deploy/overlays/policy/policy.yaml is stale; run `make policy` (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(wantBinding.Spec, gotBinding.Spec, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("policy binding is stale; run `make policy` (-want +got):\n%s", diff)
	}
}

// TestWebhookObjectSelectorMatchesConfig: the shipped webhook skips exactly the nodes the
// default config does not gate.
func TestWebhookObjectSelectorMatchesConfig(t *testing.T) {
	cfg := defaultConfig(t)
	want, err := policy.ObjectSelector(&cfg)
	if err != nil {
		t.Fatal(err)
	}
	objs := readManifests(t, "base/webhook.yaml")
	if len(objs) != 1 {
		t.Fatalf("base/webhook.yaml holds %d objects, want 1 (the simulator loads it alone)", len(objs))
	}
	wh := typed[admissionregistrationv1.MutatingWebhookConfiguration](t, objs[0])
	for _, w := range wh.Webhooks {
		if diff := cmp.Diff(want, w.ObjectSelector, cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("webhook %s objectSelector != policy.ObjectSelector(config.DefaultConfig()) (-want +got):\n%s", w.Name, diff)
		}
	}
}
