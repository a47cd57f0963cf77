package autoscaler

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

	"github.com/startupgate/startupgate/internal/servingcert"
)

// RegistrationPause is a validating admission webhook on the Node CREATEs of a NodePool.
// Armed, it stops Karpenter before it answers the next one: Karpenter's own create call is
// still waiting, so the Node exists and Karpenter cannot have registered it. Karpenter
// registers a node milliseconds after it creates it, so a watch that stopped it on seeing
// the Node would come too late.
type RegistrationPause struct {
	name      string
	srv       *http.Server
	client    kubernetes.Interface
	karpenter *Karpenter

	mu    sync.Mutex
	armed chan string // receives the name of the Node that stopped Karpenter
}

// PauseAtRegistration serves the webhook and registers it, as name, for the Nodes that
// carry labels.
func (k *Karpenter) PauseAtRegistration(ctx context.Context, c kubernetes.Interface, name string, labels map[string]string) (*RegistrationPause, error) {
	dir, err := os.MkdirTemp("", "startupgate-pause-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	ca, err := servingcert.Write(filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key"), servingcert.Loopback)
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
	p := &RegistrationPause{name: name, client: c, karpenter: k}
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
			ObjectSelector:          &metav1.LabelSelector{MatchLabels: labels},
			FailurePolicy:           ptr.To(admissionregistrationv1.Ignore),
			SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNoneOnDryRun),
			AdmissionReviewVersions: []string{"v1"},
			TimeoutSeconds:          ptr.To(int32(10)),
		}},
	}
	api := c.AdmissionregistrationV1().ValidatingWebhookConfigurations()
	_ = api.Delete(ctx, p.name, metav1.DeleteOptions{})
	if _, err := api.Create(ctx, vw, metav1.CreateOptions{}); err != nil {
		_ = p.srv.Close()
		return nil, fmt.Errorf("registering the registration pause: %w", err)
	}
	return p, nil
}

// Arm makes the next Node CREATE stop Karpenter; the returned channel receives that Node's
// name, or closes without one if Karpenter could not be stopped.
func (p *RegistrationPause) Arm() <-chan string {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.armed = make(chan string, 1)
	return p.armed
}

// Resume continues Karpenter.
func (p *RegistrationPause) Resume() error { return p.karpenter.Resume() }

func (p *RegistrationPause) serve(w http.ResponseWriter, r *http.Request) {
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
		if err := p.karpenter.Pause(); err == nil {
			armed <- review.Request.Name
		}
		close(armed)
	}
	review.Response = &admissionv1.AdmissionResponse{UID: review.Request.UID, Allowed: true}
	review.Request = nil
	_ = json.NewEncoder(w).Encode(&review)
}

// Stop removes the webhook and stops serving it.
func (p *RegistrationPause) Stop(ctx context.Context) error {
	err := p.client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Delete(ctx, p.name, metav1.DeleteOptions{})
	return errors.Join(client.IgnoreNotFound(err), p.srv.Close())
}
