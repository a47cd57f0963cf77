package gateundertest

import (
	"context"
	"fmt"
	"path/filepath"
	"reflect"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"

	"github.com/startupgate/startupgate/deploy"
	"github.com/startupgate/startupgate/gate/config"
	"github.com/startupgate/startupgate/gate/policy"
	"github.com/startupgate/startupgate/gate/rule"
	"github.com/startupgate/startupgate/internal/servingcert"
	"github.com/startupgate/startupgate/sim/scenario"
)

// Mode is how the gate under test runs.
type Mode string

const (
	// InProcess runs setup.NewManager — the same wiring as cmd/gate — in this process,
	// with its webhook on a real TLS port registered from deploy/base/webhook.yaml.
	InProcess Mode = "in-process"
	// Policy installs the MutatingAdmissionPolicy form and runs the controller in-process.
	Policy Mode = "policy"
	// Off runs no gate at all: the negative control.
	Off Mode = "off"
	// Floor taints by the admission policy and releases with the trivial floor
	// controller instead of the gate: the plane's own floor, the benchmark's reference.
	Floor Mode = "floor"
	// Installed is a gate that already runs in the cluster, installed as a user installs it
	// (its chart, on a real node): the simulator starts none, checks that admission taints
	// before the first join, and judges the run as with any gate. The scenario's gate
	// config must be the installed one's, and no step may act on the gate.
	Installed Mode = "installed"
)

// ParseMode validates a --gate value.
func ParseMode(s string) (Mode, error) {
	switch m := Mode(s); m {
	case InProcess, Policy, Off, Floor, Installed:
		return m, nil
	}
	return "", fmt.Errorf("--gate %q: want in-process, policy, off, floor or installed", s)
}

// webhookConfig loads the shipped MutatingWebhookConfiguration and points it at the
// in-process server. Only what differs in a test plane changes: the name (one per
// scenario), the client config (a URL instead of a Service), and the objectSelector, which
// takes the scenario's node selector so that concurrent scenarios never cross.
func webhookConfig(cfg *config.Config, name, url string, ca []byte) (*admissionregistrationv1.MutatingWebhookConfiguration, error) {
	wh := &admissionregistrationv1.MutatingWebhookConfiguration{}
	if err := loadManifest("base/webhook.yaml", wh); err != nil {
		return nil, err
	}
	if len(wh.Webhooks) != 1 {
		return nil, fmt.Errorf("deploy/base/webhook.yaml: want one webhook, found %d", len(wh.Webhooks))
	}
	sel, err := policy.ObjectSelector(cfg)
	if err != nil {
		return nil, err
	}
	wh.Name = "startupgate-" + name
	w := &wh.Webhooks[0]
	w.ClientConfig = admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: ca}
	w.ObjectSelector = sel
	return wh, nil
}

// ShippedWebhookName is the name of the webhook in deploy/base/webhook.yaml: the
// apiserver's admission metrics label the gate's calls with it.
func ShippedWebhookName() (string, error) {
	wh := &admissionregistrationv1.MutatingWebhookConfiguration{}
	if err := loadManifest("base/webhook.yaml", wh); err != nil {
		return "", err
	}
	if len(wh.Webhooks) == 0 {
		return "", fmt.Errorf("deploy/base/webhook.yaml holds no webhook")
	}
	return wh.Webhooks[0].Name, nil
}

// loadManifest strictly decodes one shipped manifest from deploy/.
func loadManifest(path string, obj any) error {
	raw, err := deploy.FS.ReadFile(path)
	if err != nil {
		return err
	}
	if err := yaml.UnmarshalStrict(raw, obj); err != nil {
		return fmt.Errorf("decoding deploy/%s: %w", path, err)
	}
	return nil
}

// WaitAdmission dry-run creates, for every rule that taints at creation, a probe node its
// selector matches (labelled for scenario name), until admission adds that rule's taint.
// Each rule has its own policy, and the apiserver activates policies one by one: one
// rule's taint says nothing of another's.
func WaitAdmission(ctx context.Context, cs kubernetes.Interface, cfg *config.Config, name string) error {
	for _, r := range cfg.Admitting() {
		if err := waitRule(ctx, cs, r, name); err != nil {
			return err
		}
	}
	return nil
}

func waitRule(ctx context.Context, cs kubernetes.Interface, r *rule.Rule, name string) error {
	lbls, err := probeLabels(r.NodeSelector)
	if err != nil {
		return err
	}
	lbls[scenario.Label], lbls[corev1.LabelHostname] = name, name+"-admission-probe"
	probe := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name + "-admission-probe", Labels: lbls}}
	deadline := time.Now().Add(30 * time.Second)
	var last error
	for time.Now().Before(deadline) {
		out, err := cs.CoreV1().Nodes().Create(ctx, probe, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err == nil && r.HasTaint(out) {
			return nil
		}
		last = err
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
	if last == nil {
		return fmt.Errorf("gate admission for rule %q not active after 30s (the probe was admitted without its taint)", r.Name)
	}
	return fmt.Errorf("gate admission for rule %q not active after 30s (last error: %w)", r.Name, last)
}

// probeLabels are labels that a node selector matches: the first value of each = and in,
// a value for each exists; a negative requirement is met by leaving the key out.
func probeLabels(selector string) (map[string]string, error) {
	sel, err := labels.Parse(selector)
	if err != nil {
		return nil, err
	}
	reqs, _ := sel.Requirements()
	out := map[string]string{}
	for _, req := range reqs {
		switch req.Operator() {
		case selection.Equals, selection.DoubleEquals, selection.In:
			out[req.Key()] = req.Values().List()[0]
		case selection.Exists:
			out[req.Key()] = "true"
		}
	}
	return out, nil
}

func ignoreNotFound(err error) error {
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// WriteServingCert writes tls.crt/tls.key for 127.0.0.1, signed by a per-process CA, and
// returns the CA bundle the webhook configuration must trust. Real TLS, real verification.
func WriteServingCert(dir string) ([]byte, error) {
	return servingcert.Write(filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key"), servingcert.Loopback)
}

// CheckMode refuses a scenario that mode cannot run: an installed gate is the cluster's, and
// the simulator can neither start it late, run it as a process, change its admission or
// config, nor put faults between it and the apiserver.
func CheckMode(mode Mode, sc *scenario.Scenario) error {
	if mode != Installed {
		return nil
	}
	switch {
	case sc.GateProcess != nil:
		return fmt.Errorf("scenario %s runs its gate as a process; --gate installed runs none", sc.Name)
	case sc.GateStartsAt > 0:
		return fmt.Errorf("scenario %s starts its gate late; --gate installed cannot", sc.Name)
	case sc.Admission != "":
		return fmt.Errorf("scenario %s sets admission %q; --gate installed keeps the installed gate's", sc.Name, sc.Admission)
	}
	for i := range sc.Timeline {
		s := &sc.Timeline[i]
		for _, a := range []any{s.WebhookOutage, s.WebhookLatency, s.GateCrash, s.LeaderFailover, s.WatchDrops, s.SuspendRule} {
			if !reflect.ValueOf(a).IsNil() {
				return fmt.Errorf("scenario %s: step %d acts on the gate under test (%T); --gate installed cannot", sc.Name, i+1, a)
			}
		}
	}
	return nil
}
