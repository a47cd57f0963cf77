package kubelet

import (
	"context"
	"errors"
	"net/url"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/startupgate/startupgate/sim/scenario"
)

func TestKubeletDelayIsSeeded(t *testing.T) {
	tl := scenario.PodTimeline{After: 2 * time.Second, Jitter: time.Second}
	a := &Kubelet{Seed: 7}
	b := &Kubelet{Seed: 7}
	c := &Kubelet{Seed: 8}
	same, differ := true, false
	for _, n := range []string{"n0", "n1", "n2", "n3", "n4"} {
		da, db, dc := a.delay(n, "init", 0, tl), b.delay(n, "init", 0, tl), c.delay(n, "init", 0, tl)
		same = same && da == db
		differ = differ || da != dc
		if da < time.Second || da > 3*time.Second {
			t.Errorf("delay %s outside 2s ± 1s", da)
		}
	}
	if !same || !differ {
		t.Errorf("same seed same schedule: %v; other seed differs: %v", same, differ)
	}
}

// timeoutErr is a network timeout, as net/http's TLS handshake timeout is.
type timeoutErr struct{}

func (timeoutErr) Error() string   { return "net/http: TLS handshake timeout" }
func (timeoutErr) Timeout() bool   { return true }
func (timeoutErr) Temporary() bool { return true }

// TestRetriable: transport timeouts and requests whose HTTP/2 connection was closed under
// them are retried, as a kubelet retries them; other errors are not.
func TestRetriable(t *testing.T) {
	put := func(err error) error {
		return &url.Error{Op: "Put", URL: "https://127.0.0.1/api/v1/pods/x/status", Err: err}
	}
	for _, tt := range []struct {
		err  error
		want bool
	}{
		{put(timeoutErr{}), true},
		{put(errors.New("http2: client connection force closed via ClientConn.Close")), true},
		{put(errors.New("http2: client connection lost")), true},
		{errors.New("net/http: TLS handshake timeout"), false}, // a string alone is not a timeout
		{put(errors.New("x509: certificate signed by unknown authority")), false},
		{errors.New("pods \"x\" not found"), false},
	} {
		if got := retriable(tt.err); got != tt.want {
			t.Errorf("retriable(%v) = %v, want %v", tt.err, got, tt.want)
		}
	}
}

// TestStatusReport: with StatusReport set, a node reports its status again and again once
// it is Ready, and only then; the report keeps it Ready. Without the reports, the
// node-lifecycle controller never looks again at a Node whose taint write it lost.
func TestStatusReport(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	client := fake.NewClientset()
	k := &Kubelet{Client: client, Namespace: "ns", Scenario: "s", StatusReport: 100 * time.Millisecond}
	if err := k.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if err := k.Register(ctx, "ready", nil, nil, 0); err != nil {
		t.Fatal(err)
	}
	if err := k.Register(ctx, "late", nil, nil, time.Hour); err != nil {
		t.Fatal(err)
	}
	reports := func(node string) int {
		n := 0
		for _, a := range client.Actions() {
			if p, ok := a.(k8stesting.PatchAction); ok && a.GetSubresource() == "status" && p.GetName() == node {
				n++
			}
		}
		return n
	}
	deadline := time.Now().Add(30 * time.Second)
	for reports("ready") < 3 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if n := reports("ready"); n < 3 {
		t.Fatalf("node ready: %d status reports, want at least 3", n)
	}
	if n := reports("late"); n != 0 {
		t.Errorf("node not yet ready: %d status reports, want 0", n)
	}
	n, err := client.CoreV1().Nodes().Get(ctx, "ready", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady && c.Status != corev1.ConditionTrue {
			t.Errorf("after the reports, Ready is %s", c.Status)
		}
	}
	if len(n.Status.Conditions) != 5 {
		t.Errorf("after the reports, %d conditions, want the 5 reported Ready", len(n.Status.Conditions))
	}
}

// TestReportReadyNodeDeleted: a node deleted while its Ready report is being retried (a
// conflict, a fresh read of the old node, then the write finds it gone) is not an error:
// a same-name re-registration deletes the node between the re-read and the write.
func TestReportReadyNodeDeleted(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	client := fake.NewClientset()
	k := &Kubelet{Client: client, Namespace: "ns", Scenario: "s"}
	if err := k.Start(ctx); err != nil {
		t.Fatal(err)
	}
	node, err := client.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n0"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	writes := 0
	client.PrependReactor("update", "nodes", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() != "status" {
			return false, nil, nil
		}
		writes++
		gr := schema.GroupResource{Resource: "nodes"}
		if writes == 1 {
			return true, nil, apierrors.NewConflict(gr, "n0", errors.New("the object has been modified"))
		}
		return true, nil, apierrors.NewNotFound(gr, "n0")
	})
	if err := k.reportReady(node); err != nil {
		t.Errorf("reportReady of a node deleted under its retry: %v, want nil", err)
	}
	if writes != 2 {
		t.Errorf("%d status writes, want 2 (the conflict, then the write that finds the node gone)", writes)
	}
	if k.readyNodes() != nil {
		t.Errorf("ready nodes %v, want none: the report was not accepted", k.readyNodes())
	}
}
