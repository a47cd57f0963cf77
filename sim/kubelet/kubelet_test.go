package kubelet

import (
	"errors"
	"net/url"
	"testing"
	"time"

	"github.com/startupgate/startupgate/sim/scenario"
)

func TestKubeletDelayIsSeeded(t *testing.T) {
	tl := scenario.PodTimeline{After: 2 * time.Second, Jitter: time.Second}
	a := &Kubelet{Seed: 7}
	b := &Kubelet{Seed: 7}
	c := &Kubelet{Seed: 8}
	same, differ := true, false
	for _, n := range []string{"n0", "n1", "n2", "n3", "n4"} {
		da, db, dc := a.delay(n, "init", tl), b.delay(n, "init", tl), c.delay(n, "init", tl)
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
