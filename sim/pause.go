package sim

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/startupgate/startupgate/sim/gateundertest"
	"github.com/startupgate/startupgate/sim/scenario"
)

// registrationPause is a validating admission webhook on the Node CREATEs of a Karpenter
// scenario. Armed, it stops Karpenter before it answers the next one: Karpenter's own
// create call is still waiting, so the Node exists and Karpenter cannot have registered it.
// Karpenter registers a node milliseconds after it creates it, so a watch that stopped it
// on seeing the Node would come too late.
type registrationPause struct {
	name  string
	srv   *http.Server
	pause func() error

	mu    sync.Mutex
	armed chan string // receives the name of the Node that stopped Karpenter
}

// startRegistrationPause serves the webhook and registers it for the scenario's Nodes.
func (rn *run) startRegistrationPause(ctx context.Context, pause func() error) (*registrationPause, error) {
	dir, err := os.MkdirTemp("", "startupgate-pause-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	ca, err := gateundertest.WriteServingCert(dir)
	if err != nil {
		return nil, err
	}
	cert, err := tls.LoadX509KeyPair(filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key"))
	if err != nil {
		return nil, err
	}
	l, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12})
	if err != nil {
		return nil, err
	}
	p := &registrationPause{name: "startupgate-sim-pause-" + rn.sc.Name, pause: pause}
	p.srv = &http.Server{Handler: http.HandlerFunc(p.serve), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = p.srv.Serve(l) }()
	url := "https://" + l.Addr().(*net.TCPAddr).String() + "/pause"
	vw := &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: p.name},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name:         "pause.sim.startupgate.io",
			ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: ca},
			Rules: []admissionregistrationv1.RuleWithOperations{{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
				Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"nodes"}},
			}},
			ObjectSelector:          &metav1.LabelSelector{MatchLabels: map[string]string{scenario.Label: rn.sc.Name}},
			FailurePolicy:           ptr.To(admissionregistrationv1.Ignore),
			SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNoneOnDryRun),
			AdmissionReviewVersions: []string{"v1"},
			TimeoutSeconds:          ptr.To(int32(10)),
		}},
	}
	api := rn.client.AdmissionregistrationV1().ValidatingWebhookConfigurations()
	_ = api.Delete(ctx, p.name, metav1.DeleteOptions{})
	if _, err := api.Create(ctx, vw, metav1.CreateOptions{}); err != nil {
		_ = p.srv.Close()
		return nil, fmt.Errorf("registering the registration pause: %w", err)
	}
	return p, nil
}

// arm makes the next Node CREATE stop Karpenter; the returned channel receives that Node's
// name.
func (p *registrationPause) arm() <-chan string {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.armed = make(chan string, 1)
	return p.armed
}

func (p *registrationPause) serve(w http.ResponseWriter, r *http.Request) {
	var review admissionv1.AdmissionReview
	if err := json.NewDecoder(r.Body).Decode(&review); err != nil || review.Request == nil {
		http.Error(w, "want an AdmissionReview", http.StatusBadRequest)
		return
	}
	p.mu.Lock()
	armed := p.armed
	p.armed = nil
	p.mu.Unlock()
	if armed != nil {
		if err := p.pause(); err == nil {
			armed <- review.Request.Name
		}
		close(armed)
	}
	review.Response = &admissionv1.AdmissionResponse{UID: review.Request.UID, Allowed: true}
	review.Request = nil
	_ = json.NewEncoder(w).Encode(&review)
}

// stop removes the webhook and stops serving it.
func (p *registrationPause) stop(ctx context.Context, c kubernetes.Interface) error {
	err := c.AdmissionregistrationV1().ValidatingWebhookConfigurations().Delete(ctx, p.name, metav1.DeleteOptions{})
	return errors.Join(client.IgnoreNotFound(err), p.srv.Close())
}

// pauseAutoscaler arms the pause, waits for the Node that stops Karpenter, and continues
// Karpenter For later.
func (rn *run) pauseAutoscaler(ctx context.Context, pa *scenario.PauseAutoscaler) error {
	if rn.autoscale == nil || rn.autoscale.pause == nil {
		return errors.New("pauseAutoscaler: no autoscaler running")
	}
	var node string
	select {
	case <-ctx.Done():
		return nil
	case n, ok := <-rn.autoscale.pause.arm():
		if !ok {
			return errors.New("pauseAutoscaler: could not stop Karpenter")
		}
		node = n
	}
	rn.note("Karpenter stopped inside the CREATE of node %s, for %s", node, pa.For)
	select {
	case <-ctx.Done():
	case <-time.After(pa.For):
	}
	if err := rn.autoscale.karpenter.Resume(); err != nil {
		return fmt.Errorf("continuing Karpenter: %w", err)
	}
	rn.note("Karpenter continued")
	return nil
}
