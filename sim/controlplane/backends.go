package controlplane

import (
	"context"
	"fmt"
	"os/exec"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/kind/pkg/cluster"
)

// Kubeconfig runs against any existing cluster. The simulator's fake nodes register there
// like real ones, so use a cluster you can spare.
type Kubeconfig struct {
	// Path to the kubeconfig; empty means the usual rules ($KUBECONFIG, ~/.kube/config).
	Path string
	// Context overrides the current context.
	Context string
}

// Name is "kubeconfig".
func (k *Kubeconfig) Name() string { return "kubeconfig" }

// Start connects to the cluster the kubeconfig names; it creates nothing.
func (k *Kubeconfig) Start(context.Context) (*rest.Config, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if k.Path != "" {
		rules.ExplicitPath = k.Path
	}
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules,
		&clientcmd.ConfigOverrides{CurrentContext: k.Context}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("loading kubeconfig %q: %w", k.Path, err)
	}
	return cfg, nil
}

// Stop does nothing: the cluster is not ours to tear down.
func (k *Kubeconfig) Stop() error { return nil }

// Kind creates a kind cluster through sigs.k8s.io/kind's Go API and then behaves like
// Kubeconfig. It needs a container engine (Docker or Podman); the machines this project is
// developed and tested on have none, so it is compiled and documented but not run here.
type Kind struct {
	// ClusterName defaults to "startupgate-sim".
	ClusterName string
	// Image is the kind node image; empty means kind's default for its version.
	Image string
	// Keep leaves the cluster running after Stop.
	Keep bool

	provider *cluster.Provider
}

// Name is "kind".
func (k *Kind) Name() string { return "kind" }

// KindAvailable reports why kind cannot run here, or nil if a container engine is present.
func KindAvailable() error {
	for _, engine := range []string{"docker", "podman"} {
		if path, err := exec.LookPath(engine); err == nil {
			if exec.Command(path, "info").Run() == nil {
				return nil
			}
		}
	}
	return fmt.Errorf("kind needs a running Docker or Podman engine, and none answers here")
}

// Start creates the kind cluster, or reuses one of the same name, and returns its admin
// config.
func (k *Kind) Start(ctx context.Context) (*rest.Config, error) {
	if err := KindAvailable(); err != nil {
		return nil, err
	}
	if k.ClusterName == "" {
		k.ClusterName = "startupgate-sim"
	}
	k.provider = cluster.NewProvider()
	existing, err := k.provider.List()
	if err != nil {
		return nil, fmt.Errorf("listing kind clusters: %w", err)
	}
	found := false
	for _, name := range existing {
		found = found || name == k.ClusterName
	}
	if !found {
		opts := []cluster.CreateOption{cluster.CreateWithWaitForReady(0)}
		if k.Image != "" {
			opts = append(opts, cluster.CreateWithNodeImage(k.Image))
		}
		if err := k.provider.Create(k.ClusterName, opts...); err != nil {
			return nil, fmt.Errorf("creating kind cluster %q: %w", k.ClusterName, err)
		}
	}
	raw, err := k.provider.KubeConfig(k.ClusterName, false)
	if err != nil {
		return nil, fmt.Errorf("reading kind kubeconfig: %w", err)
	}
	cfg, err := clientcmd.RESTConfigFromKubeConfig([]byte(raw))
	if err != nil {
		return nil, fmt.Errorf("parsing kind kubeconfig: %w", err)
	}
	return cfg, nil
}

// Stop deletes the cluster, unless Keep is set or Start never ran.
func (k *Kind) Stop() error {
	if k.provider == nil || k.Keep {
		return nil
	}
	return k.provider.Delete(k.ClusterName, "")
}

// Protobuf makes a client speak protobuf, as kubelets and the plane's own components do
// (and as controller-runtime does for built-in types, so the gate). A JSON client costs the
// apiserver a second encoding of every object it watches and costs itself a slower decode:
// a share of the plane the simulator, or the floor, would take that a real cluster's
// kubelets do not.
func Protobuf(rc *rest.Config) {
	rc.ContentType = runtime.ContentTypeProtobuf
	rc.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
}
