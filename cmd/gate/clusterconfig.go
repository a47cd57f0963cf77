package main

import (
	"context"
	"fmt"
	"io"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/startupgate/startupgate/gate/config"
)

// clusterConfig is the config status and release judge by: the running gate's, read from its
// ConfigMap, unless --config or a contract flag was given (then s.cfg). A gate installed
// without that ConfigMap (flags only) leaves s.cfg, and a line on stderr says so; `gate
// status` that judged by the defaults while the gate ran other rules would show every node
// of those rules wrong.
func clusterConfig(ctx context.Context, c client.Reader, s *settings, stderr io.Writer) (*config.Config, error) {
	if !s.fromCluster {
		return &s.cfg, nil
	}
	cm := &corev1.ConfigMap{}
	err := c.Get(ctx, client.ObjectKey{Namespace: s.gateNamespace, Name: s.configMap}, cm)
	if apierrors.IsNotFound(err) {
		fmt.Fprintf(stderr, "no ConfigMap %s/%s: judging by the default rules (pass --config FILE, or --gate-namespace and --config-map)\n", s.gateNamespace, s.configMap)
		return &s.cfg, nil
	}
	if apierrors.IsForbidden(err) {
		return nil, fmt.Errorf("reading the gate's config from ConfigMap %s/%s: %w (in the gate's own Pod, pass --config /etc/startupgate/config.yaml)", s.gateNamespace, s.configMap, err)
	}
	if err != nil {
		return nil, fmt.Errorf("reading the gate's config from ConfigMap %s/%s: %w", s.gateNamespace, s.configMap, err)
	}
	raw, ok := cm.Data["config.yaml"]
	if !ok {
		return nil, fmt.Errorf("ConfigMap %s/%s has no config.yaml", s.gateNamespace, s.configMap)
	}
	cfg, _, err := config.Load([]byte(raw))
	if err != nil {
		return nil, fmt.Errorf("ConfigMap %s/%s: %w", s.gateNamespace, s.configMap, err)
	}
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("ConfigMap %s/%s: invalid config: %w", s.gateNamespace, s.configMap, err)
	}
	return &cfg, nil
}
