package main

import (
	"context"
	"fmt"
	"io"
	"maps"
	"os"
	"regexp"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/startupgate/startupgate/gate"
	"github.com/startupgate/startupgate/gate/config"
)

// clusterClient is the client of status, release and preflight, and the config they judge
// by (clusterConfig).
func clusterClient(ctx context.Context, s *settings, rc *rest.Config) (client.Client, *config.Config, error) {
	c, err := client.New(rc, client.Options{Scheme: gate.Scheme()})
	if err != nil {
		return nil, nil, fmt.Errorf("creating client: %w", err)
	}
	cfg, err := clusterConfig(ctx, c, s, os.Stderr)
	return c, cfg, err
}

// clusterConfig is the config status and release judge by: the running gate's, read from its
// ConfigMap, unless --config or a contract flag was given (then s.cfg). kustomize and the
// chart name the ConfigMap by its content (startupgate-config-<hash>), so when the plain name is missing the
// hashed ones are read: one config among them is the gate's, and several different ones are
// an error that names them, rather than a guess. With none, `gate status` judges by s.cfg and
// says so on stderr; `gate release` refuses, as releasing by the default rules would
// leave every other rule's taint on.
func clusterConfig(ctx context.Context, c client.Reader, s *settings, stderr io.Writer) (*config.Config, error) {
	if !s.fromCluster {
		return &s.cfg, nil
	}
	cm := &corev1.ConfigMap{}
	err := c.Get(ctx, client.ObjectKey{Namespace: s.gateNamespace, Name: s.configMap}, cm)
	if apierrors.IsNotFound(err) {
		cm, err = hashedConfigMap(ctx, c, s.gateNamespace, s.configMap)
		if cm != nil {
			fmt.Fprintf(stderr, "reading the gate's config from ConfigMap %s/%s (the name by content of %s)\n", s.gateNamespace, cm.Name, s.configMap)
		}
	}
	if cm == nil && err == nil {
		if s.releaseCommand {
			return nil, fmt.Errorf("no ConfigMap %s/%s or %[2]s-<hash>: pass --config FILE (the gate's config) or --config-map NAME; releasing by the default rules would leave every other rule's taint", s.gateNamespace, s.configMap)
		}
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
		return nil, fmt.Errorf("ConfigMap %s/%s has no config.yaml", s.gateNamespace, cm.Name)
	}
	cfg, _, err := config.Load([]byte(raw))
	if err != nil {
		return nil, fmt.Errorf("ConfigMap %s/%s: %w", s.gateNamespace, cm.Name, err)
	}
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("ConfigMap %s/%s: invalid config: %w", s.gateNamespace, cm.Name, err)
	}
	return &cfg, nil
}

// hashedConfigMap is the ConfigMap kustomize's configMapGenerator or the chart made of base: named
// base-<hash>, with a config.yaml. The one the gate's running Pods mount is the gate's, when
// they all mount one; with no gate Pod running (an uninstall), the generations are read, and
// as old ones stay until pruned, several may exist: when their configs differ it cannot
// tell which the gate ran, and says so. It returns nil and no error when there is none.
func hashedConfigMap(ctx context.Context, c client.Reader, namespace, base string) (*corev1.ConfigMap, error) {
	mounted, err := mountedConfigMaps(ctx, c, namespace, base)
	if err != nil {
		return nil, err
	}
	switch len(mounted) {
	case 0:
	case 1:
		cm := &corev1.ConfigMap{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: mounted[0]}, cm); err != nil {
			return nil, err
		}
		return cm, nil
	default:
		return nil, fmt.Errorf("the gate's running Pods mount different configs (%s), as in a rollout: pass --config-map NAME or --config FILE",
			strings.Join(mounted, ", "))
	}
	list := &corev1.ConfigMapList{}
	if err := c.List(ctx, list, client.InNamespace(namespace)); err != nil {
		return nil, err
	}
	var found []*corev1.ConfigMap
	for i := range list.Items {
		cm := &list.Items[i]
		hash, ok := strings.CutPrefix(cm.Name, base+"-")
		if _, has := cm.Data["config.yaml"]; ok && has && generatedHash.MatchString(hash) {
			found = append(found, cm)
		}
	}
	if len(found) == 0 {
		return nil, nil
	}
	var names []string
	for _, cm := range found {
		names = append(names, cm.Name)
		if cm.Data["config.yaml"] != found[0].Data["config.yaml"] {
			return nil, fmt.Errorf("ConfigMaps %s hold different configs and no %s exists: pass --config-map NAME (the one the gate's Deployment mounts) or --config FILE",
				strings.Join(names, ", "), base)
		}
	}
	return found[0], nil
}

// generatedHash is the suffix of a ConfigMap named by its content: kustomize's (ten
// characters of the alphabet its hash is encoded in) or the chart's (ten hex digits).
var generatedHash = regexp.MustCompile(`^([2456789bcdfghkmt]{10}|[0-9a-f]{10})$`)

// mountedConfigMaps are the names, base or base-<hash>, of the ConfigMaps that the running
// Pods of the namespace mount, sorted.
func mountedConfigMaps(ctx context.Context, c client.Reader, namespace, base string) ([]string, error) {
	pods := &corev1.PodList{}
	if err := c.List(ctx, pods, client.InNamespace(namespace)); err != nil {
		return nil, err
	}
	names := map[string]bool{}
	for _, p := range pods.Items {
		if p.Status.Phase != corev1.PodRunning || p.DeletionTimestamp != nil {
			continue
		}
		for _, v := range p.Spec.Volumes {
			if v.ConfigMap == nil {
				continue
			}
			if hash, ok := strings.CutPrefix(v.ConfigMap.Name, base+"-"); ok && generatedHash.MatchString(hash) {
				names[v.ConfigMap.Name] = true
			}
		}
	}
	return slices.Sorted(maps.Keys(names)), nil
}
