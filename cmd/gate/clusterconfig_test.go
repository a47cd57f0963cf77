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
// ConfigMap (or kustomize's hashed one), unless a --config file or a contract flag says
// otherwise; with no ConfigMap status says so and judges by the defaults, and release
// refuses; a ConfigMap that holds no valid config is an error.
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
		pods     []*corev1.Pod
		wantRule string
		wantErr  string
		wantNote string
	}{
		{name: "the running gate's rules", args: []string{"status"}, objs: []*corev1.ConfigMap{cm("startupgate-system", rules)}, wantRule: "gpu"},
		{name: "another namespace", args: []string{"release", "--gate-namespace", "gates", "--all"}, objs: []*corev1.ConfigMap{cm("gates", rules)}, wantRule: "gpu"},
		{name: "a contract flag wins", args: []string{"status", "--min-hold", "1m"}, objs: []*corev1.ConfigMap{cm("startupgate-system", rules)}, wantRule: config.DefaultRuleName},
		{name: "no ConfigMap: the defaults, said", args: []string{"status"}, wantRule: config.DefaultRuleName, wantNote: "no ConfigMap startupgate-system/startupgate-config"},
		{name: "not a config", args: []string{"status"}, objs: []*corev1.ConfigMap{cm("startupgate-system", "rules: 3\n")}, wantErr: "ConfigMap startupgate-system/startupgate-config"},
		// kustomize's configMapGenerator names the ConfigMap by its content.
		{name: "kustomize's hashed name", args: []string{"release", "--all"}, objs: []*corev1.ConfigMap{named(cm("startupgate-system", rules), "startupgate-config-7fh2c6kt9m")},
			wantRule: "gpu", wantNote: "startupgate-system/startupgate-config-7fh2c6kt9m"},
		{name: "two generations, one config", args: []string{"release", "--all"}, objs: []*corev1.ConfigMap{
			named(cm("startupgate-system", rules), "startupgate-config-7fh2c6kt9m"), named(cm("startupgate-system", rules), "startupgate-config-b5g8d2m4tk")}, wantRule: "gpu"},
		{name: "two generations, two configs: no guess", args: []string{"release", "--all"}, objs: []*corev1.ConfigMap{
			named(cm("startupgate-system", rules), "startupgate-config-7fh2c6kt9m"), named(cm("startupgate-system", "{}\n"), "startupgate-config-b5g8d2m4tk")},
			wantErr: "hold different configs"},
		// The chart names it by the hex of its content's sha256.
		{name: "the chart's hashed name", args: []string{"release", "--all"}, objs: []*corev1.ConfigMap{named(cm("startupgate-system", rules), "startupgate-config-3fa0e19c0b")},
			wantRule: "gpu", wantNote: "startupgate-system/startupgate-config-3fa0e19c0b"},
		{name: "not kustomize's name", args: []string{"status"}, objs: []*corev1.ConfigMap{named(cm("startupgate-system", rules), "startupgate-config-old")},
			wantRule: config.DefaultRuleName, wantNote: "no ConfigMap"},
		// Releasing by the default rules would leave every other rule's taint on.
		{name: "the generation the running gate mounts", args: []string{"release", "--all"}, objs: []*corev1.ConfigMap{
			named(cm("startupgate-system", rules), "startupgate-config-7fh2c6kt9m"), named(cm("startupgate-system", "{}\n"), "startupgate-config-b5g8d2m4tk")},
			pods: []*corev1.Pod{gatePod("startupgate-config-7fh2c6kt9m")}, wantRule: "gpu"},
		{name: "a rollout between two generations: no guess", args: []string{"release", "--all"}, objs: []*corev1.ConfigMap{
			named(cm("startupgate-system", rules), "startupgate-config-7fh2c6kt9m"), named(cm("startupgate-system", rules), "startupgate-config-b5g8d2m4tk")},
			pods: []*corev1.Pod{gatePod("startupgate-config-7fh2c6kt9m"), gatePod("startupgate-config-b5g8d2m4tk")}, wantErr: "mount different configs"},
		{name: "no ConfigMap: release refuses", args: []string{"release", "--all"}, wantErr: "pass --config FILE"},
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
			for _, p := range tc.pods {
				b = b.WithObjects(p)
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

// named is cm under another name.
func named(cm *corev1.ConfigMap, name string) *corev1.ConfigMap {
	cm.Name = name
	return cm
}

// gatePod is a running Pod of the gate in startupgate-system that mounts ConfigMap cm.
func gatePod(cm string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "startupgate-system", Name: "startupgate-" + cm[len(cm)-5:]},
		Spec: corev1.PodSpec{Volumes: []corev1.Volume{{Name: "config", VolumeSource: corev1.VolumeSource{
			ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: cm}}}}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning}}
}
