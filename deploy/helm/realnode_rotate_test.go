package helm_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/startupgate/startupgate/gate/certs"
	"github.com/startupgate/startupgate/sim"
)

// rotationOverlap is the shortest overlap gate rotate-ca takes: the test waits it out.
const rotationOverlap = certs.MinOverlap

// prober probes the webhook every 100 ms, twice, and counts per phase what failed:
//   - a dry-run Node CREATE through the webhook, which must be answered and taint;
//   - a new TLS connection to each Ready gate Pod, checked against the caBundle the webhook
//     configuration holds at that moment, as the apiserver checks a connection it opens.
//     The apiserver keeps its connections to the webhook open and checks a certificate only
//     when it connects, so the first probe alone misses a replica whose certificate the
//     caBundle no longer trusts: with the CA's Secret deleted (the way before rotate-ca)
//     every Node CREATE probe passed.
type prober struct {
	c     *cluster
	began time.Time
	done  chan struct{}
	wg    sync.WaitGroup

	mu     sync.Mutex
	phase  string
	phases []string
	counts map[string]*probeCounts
}

// probeCounts are one phase's probes and failures, with the first failure of each kind.
type probeCounts struct {
	creates, createsFailed int
	dials, dialsFailed     int
	firstCreate, firstDial error
	// unreachable are the connections that did not get as far as a certificate (a gate
	// container restarting while the kubelet still reports its Pod Ready): no certificate's
	// fault, counted apart; the Node CREATE probe judges the webhook's availability.
	unreachable    int
	firstUnreached error
}

// startProbing probes from now on, in the phase named, until stop; the probes outlive the
// context of whatever started them.
func (c *cluster) startProbing(phase string) *prober {
	p := &prober{c: c, began: time.Now(), done: make(chan struct{}), counts: map[string]*probeCounts{}}
	p.setPhase(phase)
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-p.done:
				return
			case <-tick.C:
			}
			p.create(context.Background())
			p.handshakes(context.Background())
		}
	}()
	return p
}

// setPhase counts what follows in the phase named.
func (p *prober) setPhase(phase string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.phase = phase
	if p.counts[phase] == nil {
		p.counts[phase] = &probeCounts{}
		p.phases = append(p.phases, phase)
	}
}

// note counts one probe of the current phase.
func (p *prober) note(dial bool, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	pc := p.counts[p.phase]
	total, failed, first := &pc.creates, &pc.createsFailed, &pc.firstCreate
	if dial {
		total, failed, first = &pc.dials, &pc.dialsFailed, &pc.firstDial
	}
	*total++
	if err == nil {
		return
	}
	*failed++
	if *first == nil {
		*first = fmt.Errorf("%s after the probes began: %w", time.Since(p.began).Round(time.Millisecond), err)
	}
}

// unreached counts a connection that failed before any certificate was checked.
func (p *prober) unreached(err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	pc := p.counts[p.phase]
	pc.unreachable++
	if pc.firstUnreached == nil {
		pc.firstUnreached = fmt.Errorf("%s after the probes began: %w", time.Since(p.began).Round(time.Millisecond), err)
	}
}

func (p *prober) create(ctx context.Context) {
	probe := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "probe-of-the-webhook"}}
	out, err := p.c.cs.CoreV1().Nodes().Create(ctx, probe, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	if err == nil && !defaultRule().HasTaint(out) {
		err = fmt.Errorf("admitted without the taint: %v", out.Spec.Taints)
	}
	p.note(false, err)
}

// handshakes opens a connection to each Ready gate Pod and checks its certificate against
// the caBundle as it is now.
func (p *prober) handshakes(ctx context.Context) {
	mwc, err := p.c.cs.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(ctx, releaseName, metav1.GetOptions{})
	if err != nil {
		return // the API's trouble, not the certificate's; the Node CREATE probe sees it
	}
	pods, err := p.c.cs.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/instance=" + releaseName + ",app.kubernetes.io/component!=release-nodes"})
	if err != nil {
		return
	}
	svc := mwc.Webhooks[0].ClientConfig.Service
	for _, pod := range pods.Items {
		if pod.DeletionTimestamp != nil || !podReady(&pod) {
			continue // not behind the Service
		}
		err := servesUnder(pod.Status.PodIP, svc.Name+"."+svc.Namespace+".svc", mwc.Webhooks[0].ClientConfig.CABundle)
		var verify *tls.CertificateVerificationError
		if err != nil && !errors.As(err, &verify) {
			p.unreached(fmt.Errorf("Pod %s: %w", pod.Name, err))
			continue
		}
		if err != nil {
			err = fmt.Errorf("Pod %s: %w", pod.Name, err)
		}
		p.note(true, err)
	}
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// stop ends the probes and reports each phase's counts.
func (p *prober) stop() map[string]*probeCounts {
	close(p.done)
	p.wg.Wait()
	return p.counts
}

// report logs each phase's counts and fails the test for a failure in a phase strict names.
func (p *prober) report(t *testing.T, strict ...string) {
	t.Helper()
	counts := p.stop()
	for _, ph := range p.phases {
		pc := counts[ph]
		line := fmt.Sprintf("%s: Node CREATEs through the webhook %d, failed %d (first: %v); new connections to the gate's Pods checked against the caBundle of the moment %d, failed %d (first: %v)",
			ph, pc.creates, pc.createsFailed, pc.firstCreate, pc.dials, pc.dialsFailed, pc.firstDial)
		if pc.unreachable > 0 {
			line += fmt.Sprintf("; connections that reached no certificate %d (first: %v)", pc.unreachable, pc.firstUnreached)
		}
		bad := pc.createsFailed > 0 || pc.dialsFailed > 0 || pc.creates == 0 || pc.dials == 0
		if bad && slices.Contains(strict, ph) {
			p.c.logGateLogs(t)
			p.c.logKubeletOnGate(t)
			t.Error(line)
		} else {
			t.Log(line)
		}
	}
}

// servesUnder checks the webhook certificate served at ip, as the apiserver does, against
// the caBundle for the Service's name.
func servesUnder(ip, dnsName string, bundle []byte) error {
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(bundle) {
		return fmt.Errorf("the caBundle holds no certificate")
	}
	conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", net.JoinHostPort(ip, "9443"),
		&tls.Config{RootCAs: roots, ServerName: dnsName, MinVersion: tls.VersionTLS12})
	if err != nil {
		return err
	}
	return conn.Close()
}

// burstRotating is the chart's burst of nodes with `gate rotate-ca` run, as an operator
// would from a workstation, as it starts, and the webhook probed from the rotation to past
// the overlap's end and the replicas' next check: no probe may fail. Then the caBundle
// holds the new CA alone, and each replica serves a certificate it verifies.
func (c *cluster) burstRotating(t *testing.T) {
	t.Helper()
	var p *prober
	c.burst(t, "chart-burst", func(context.Context, sim.Live) {
		out, err := c.gateCLI(t, "rotate-ca", "--overlap", rotationOverlap.String())
		if err != nil {
			t.Errorf("gate rotate-ca: %v\n%s", err, out)
			return
		}
		t.Logf("gate rotate-ca: %s", strings.TrimSpace(out))
		p = c.startProbing("the CA rotation")
	})
	if p == nil {
		return // the rotation failed, and said so
	}
	time.Sleep(time.Until(p.began.Add(rotationOverlap + 30*time.Second)))
	p.report(t, "the CA rotation")
	c.checkBundle(t, "startupgate-webhook-ca", certs.CACert)
}

// checkBundle: the webhooks' caBundle is the named Secret's key alone, and each gate Pod
// serves a certificate it verifies.
func (c *cluster) checkBundle(t *testing.T, secret, key string) {
	t.Helper()
	ctx := context.Background()
	mwc, err := c.cs.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(ctx, releaseName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	bundle := mwc.Webhooks[0].ClientConfig.CABundle
	s, err := c.cs.CoreV1().Secrets(namespace).Get(ctx, secret, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if string(bundle) != string(s.Data[key]) {
		t.Errorf("the caBundle holds %d certificate(s), not Secret %s's %s alone", strings.Count(string(bundle), "BEGIN CERTIFICATE"), secret, key)
	}
	svc := mwc.Webhooks[0].ClientConfig.Service
	for _, p := range c.gatePods(t) {
		if err := servesUnder(p.Status.PodIP, svc.Name+"."+svc.Namespace+".svc", bundle); err != nil {
			t.Errorf("gate Pod %s: %v", p.Name, err)
		}
	}
}

// settleAfterSwitch is how long the webhook is probed after a switch's rollout: longer than
// the replicas' check of the caBundle (15 s) and their certificate reload (10 s).
const settleAfterSwitch = 45 * time.Second

// switchModes switches certificates.mode to selfSigned and back to gate with helm upgrade,
// as docs/operations.md says to, and probes the webhook throughout: from settleAfterSwitch
// after each rollout on, every probe must pass, the caBundle must be the new mode's CA and
// each replica serve under it. What failed during each rollout is logged.
func (c *cluster) switchModes(t *testing.T) {
	t.Helper()
	c.switchMode(t, "selfSigned")
	c.checkBundle(t, releaseName+"-webhook-tls", "ca.crt")
	c.switchMode(t, "gate")
	c.checkBundle(t, releaseName+"-webhook-ca", certs.CACert)
}

func (c *cluster) switchMode(t *testing.T, mode string) {
	t.Helper()
	ctx := context.Background()
	rollout, after := "the rollout to "+mode, "after the rollout to "+mode
	p := c.startProbing(rollout)
	vals := c.values()
	vals["certificates"] = map[string]any{"mode": mode}
	began := time.Now()
	// --force-conflicts, as docs/operations.md says: the gate wrote the caBundle that the
	// selfSigned mode renders.
	if err := c.upgrade(ctx, vals, true); err != nil {
		p.stop()
		t.Fatalf("--set certificates.mode=%s: %v", mode, err)
	}
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
		d, err := c.cs.AppsV1().Deployments(namespace).Get(ctx, releaseName, metav1.GetOptions{})
		if err != nil || d.Spec.Replicas == nil {
			return false, nil //nolint:nilerr // polled again
		}
		n := *d.Spec.Replicas
		return d.Status.ObservedGeneration >= d.Generation && d.Status.UpdatedReplicas == n && d.Status.ReadyReplicas == n && d.Status.Replicas == n, nil
	}); err != nil {
		p.stop()
		t.Fatalf("the rollout to certificates.mode %s: %v; %s", mode, err, c.podStates(ctx, namespace))
	}
	t.Logf("helm upgrade to certificates.mode %s: rolled out in %s", mode, time.Since(began).Round(time.Second))
	p.setPhase(after)
	time.Sleep(settleAfterSwitch)
	p.report(t, after)
}
