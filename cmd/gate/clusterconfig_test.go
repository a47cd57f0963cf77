package main

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/startupgate/startupgate/gate"
	"github.com/startupgate/startupgate/gate/config"
)

// TestClusterConfig: status and release judge by the running gate's config, read from its
// ConfigMap, unless a --config file or a contract flag says otherwise; with no ConfigMap
// they say so and judge by the defaults; a ConfigMap that holds no valid config is an error.
func TestClusterConfig(t *testing.T) {
	rules := "apiVersion: config.startupgate.io/v1alpha1\nkind: GateConfiguration\nrules:\n" +
		"  - {name: gpu, nodeSelector: pool=gpu, taint: {key: example.com/gpu, effect: NoSchedule}, components: [{selector: app=driver}]}\n"
	cm := func(ns, data string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "startupgate-config"}, Data: map[string]string{"config.yaml": data}}
	}
	for _, tc := range []struct {
		name     string
		args     []string
		objs     []*corev1.ConfigMap
		wantRule string
		wantErr  string
		wantNote string
	}{
		{name: "the running gate's rules", args: []string{"status"}, objs: []*corev1.ConfigMap{cm("startupgate-system", rules)}, wantRule: "gpu"},
		{name: "another namespace", args: []string{"release", "--gate-namespace", "gates", "--all"}, objs: []*corev1.ConfigMap{cm("gates", rules)}, wantRule: "gpu"},
		{name: "a contract flag wins", args: []string{"status", "--min-hold", "1m"}, objs: []*corev1.ConfigMap{cm("startupgate-system", rules)}, wantRule: config.DefaultRuleName},
		{name: "no ConfigMap: the defaults, said", args: []string{"status"}, wantRule: config.DefaultRuleName, wantNote: "no ConfigMap startupgate-system/startupgate-config"},
		{name: "not a config", args: []string{"status"}, objs: []*corev1.ConfigMap{cm("startupgate-system", "rules: 3\n")}, wantErr: "ConfigMap startupgate-system/startupgate-config"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := parse(tc.args, env(), io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			b := fake.NewClientBuilder().WithScheme(gate.Scheme())
			for _, o := range tc.objs {
				b = b.WithObjects(o)
			}
			var stderr bytes.Buffer
			cfg, err := clusterConfig(context.Background(), b.Build(), s, &stderr)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("clusterConfig() = %v, want an error naming %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := cfg.EffectiveRules()[0].Name; got != tc.wantRule {
				t.Errorf("judging by rule %q, want %q", got, tc.wantRule)
			}
			if !strings.Contains(stderr.String(), tc.wantNote) {
				t.Errorf("stderr %q, want it to say %q", stderr.String(), tc.wantNote)
			}
		})
	}
}
