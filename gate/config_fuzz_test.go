// This file is an external test package: it renders the policy as `gate --print-policy`
// does, through gate/policy, which imports gate.
package gate_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"gopkg.in/yaml.v3"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/startupgate/startupgate/gate"
	"github.com/startupgate/startupgate/gate/config"
	"github.com/startupgate/startupgate/gate/policy"
	"github.com/startupgate/startupgate/gate/rule"
)

// FuzzLoadConfig feeds LoadConfig and Validate arbitrary YAML: the --config file and the
// startupgate-config ConfigMap, with every rule mode, regexes, durations and intstr budgets.
// Each step either refuses it with a message or passes it on; a config that validates must
// render as --print-policy renders it, survive a marshal and load unchanged, and admit a
// node through the webhook, all without a panic.
func FuzzLoadConfig(f *testing.F) {
	for _, seed := range configSeeds(f) {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := config.LoadConfig(data)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("LoadConfig() error with an empty message")
			}
			return
		}
		if err := cfg.Validate(); err != nil {
			if err.Error() == "" {
				t.Fatal("Validate() error with an empty message")
			}
			return
		}
		printPolicy(t, &cfg)
		roundTrip(t, &cfg)
		admitOne(t, &cfg)
	})
}

// configSeeds are the configs the project ships and tests: the example rules, the policy
// golden input, both conversions' outputs, the gate section of every scenario, and small
// configs for the fields those leave out.
func configSeeds(tb testing.TB) [][]byte {
	tb.Helper()
	var out [][]byte
	for _, file := range []string{"../deploy/examples/rules.yaml", "../testdata/policy/autoscaler-gpu.input.yaml",
		"../testdata/nrc/rules.golden.yaml", "../testdata/tainter/config.golden.yaml"} {
		data, err := os.ReadFile(file)
		if err != nil {
			tb.Fatal(err)
		}
		out = append(out, data)
	}
	out = append(out, scenarioGates(tb)...)
	for _, s := range []string{
		"", "minHold: 30s\nmaxHold: 10m\ntimeoutPolicy: keep\n", "maxhold: 10m\n", "{{{",
		"taint: {key: startup-taint.cluster-autoscaler.kubernetes.io/init, effect: NoSchedule}\nnodeSelector: pool in (a,b),!x\n",
		"components:\n- {name: cni, namespace: kube-system, selector: app=cni}\nrequiredCondition: Ready=True\nannotationOnly: true\n",
		"rules:\n- name: oos\n  mode: condition\n  taint: {key: node.kubernetes.io/out-of-service, effect: NoExecute}\n  match: [{type: Ready, status: 'False|Unknown'}]\n  maxTainted: 10%\n  keepAfterClear: true\n",
		"rules:\n- name: cni\n  mode: continuous\n  taint: {key: example.com/cni, effect: NoSchedule}\n  components: [{selector: startup.k8s.io/component=cni}]\n  settleTime: 5s\n  dryRun: true\n",
	} {
		out = append(out, []byte(s))
	}
	return out
}

// scenarioGates are the gate sections of scenarios/*.yaml, each as its own config file.
func scenarioGates(tb testing.TB) [][]byte {
	tb.Helper()
	files, err := filepath.Glob("../scenarios/*.yaml")
	if err != nil || len(files) == 0 {
		tb.Fatalf("no scenarios (%v)", err)
	}
	var out [][]byte
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			tb.Fatal(err)
		}
		var sc struct {
			Gate yaml.Node `yaml:"gate"`
		}
		if err := yaml.Unmarshal(data, &sc); err != nil {
			tb.Fatalf("%s: %v", file, err)
		}
		if sc.Gate.Kind != 0 {
			gateYAML, err := yaml.Marshal(&sc.Gate)
			if err != nil {
				tb.Fatalf("%s: %v", file, err)
			}
			out = append(out, gateYAML)
		}
	}
	return out
}

// printPolicy renders the config as `gate --print-policy` and the webhook's objectSelector
// do. A selector with no objectSelector form (gt, lt) is an error there, never a panic.
func printPolicy(t *testing.T, cfg *config.Config) {
	t.Helper()
	if _, err := policy.YAML(cfg); err != nil && err.Error() == "" {
		t.Fatal("policy.YAML() error with an empty message")
	}
	if _, err := policy.ObjectSelector(cfg); err != nil && err.Error() == "" {
		t.Fatal("policy.ObjectSelector() error with an empty message")
	}
}

// roundTrip: a valid config, written out as YAML (what `gate convert` and the Helm chart
// produce), loads and validates to the same config.
func roundTrip(t *testing.T, cfg *config.Config) {
	t.Helper()
	out, err := sigsyaml.Marshal(cfg)
	if err != nil {
		t.Fatalf("marshalling a valid config: %v", err)
	}
	again, err := config.LoadConfig(out)
	if err == nil {
		err = again.Validate()
	}
	if err != nil {
		t.Fatalf("a valid config, marshalled, does not load: %v\n%s", err, out)
	}
	if diff := cmp.Diff(*cfg, again, cmpopts.IgnoreUnexported(config.Config{}, rule.Rule{}), cmpopts.EquateEmpty()); diff != "" {
		t.Fatalf("config changed through marshal and load (-want +got):\n%s", diff)
	}
}

// admitOne runs the node webhook of the config on a node with labels, a taint and
// conditions, so that every compiled selector and condition is used once.
func admitOne(t *testing.T, cfg *config.Config) {
	t.Helper()
	node := &corev1.Node{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Node"},
		ObjectMeta: metav1.ObjectMeta{Name: "n", Labels: map[string]string{"pool": "gpu", "accelerator": "nvidia"}},
		Spec:       corev1.NodeSpec{Taints: []corev1.Taint{{Key: "node.kubernetes.io/not-ready", Effect: corev1.TaintEffectNoSchedule}}},
		Status:     corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionFalse}}},
	}
	raw, err := sigsyaml.Marshal(node)
	if err == nil {
		raw, err = sigsyaml.YAMLToJSON(raw)
	}
	if err != nil {
		t.Fatal(err)
	}
	resp := gate.NewNodeWebhook(gate.Scheme(), cfg).Handle(context.Background(), admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
		UID: "u1", Kind: metav1.GroupVersionKind{Version: "v1", Kind: "Node"}, Operation: admissionv1.Create,
		Object: runtime.RawExtension{Raw: raw},
	}})
	if !resp.Allowed {
		t.Fatalf("a valid config's webhook refused a well-formed node: %+v", resp.Result)
	}
}
