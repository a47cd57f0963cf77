package gate

import (
	"context"
	"net/url"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	clientmetrics "k8s.io/client-go/tools/metrics"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// The gate's latency taken apart. controller-runtime already times the workqueue wait
// (workqueue_queue_duration_seconds) and the whole reconcile; these fill in the rest of a
// release: the decision up to the write, the write itself, and client-go's own client-side
// rate limiter and request round trip, which controller-runtime does not export. Labels are
// bounded: a stage or an HTTP verb, never a node or a host.
var (
	releaseStageSeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "startupgate_release_stage_seconds",
		Help: "Time a release spends in each stage inside the gate, by stage: decide (reconcile start to the write), write (the guarded Node write, retries included).",
		// 0.1 ms .. ~6.5 s: a decision is micro- to milliseconds, a write on a busy plane seconds.
		Buckets: prometheus.ExponentialBuckets(0.0001, 2, 17),
	}, []string{"stage"})
	clientRateLimiterSeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "rest_client_rate_limiter_duration_seconds",
		Help:    "Client-side rate limiter latency in seconds, by verb (client-go's metric, as Kubernetes names it).",
		Buckets: prometheus.ExponentialBuckets(0.0001, 2, 17),
	}, []string{"verb"})
	clientRequestSeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "rest_client_request_duration_seconds",
		Help:    "Request latency in seconds, rate limiter wait included, by verb (client-go's metric, as Kubernetes names it).",
		Buckets: prometheus.ExponentialBuckets(0.0001, 2, 17),
	}, []string{"verb"})
)

// Release stages.
const (
	stageDecide = "decide"
	stageWrite  = "write"
)

func observeStage(stage string, since time.Time) {
	releaseStageSeconds.WithLabelValues(stage).Observe(time.Since(since).Seconds())
}

// latencyAdapter hands client-go's latency observations to a histogram by verb (the host
// and URL would be unbounded labels).
type latencyAdapter struct{ h *prometheus.HistogramVec }

// Observe records one request's latency under its verb.
func (a latencyAdapter) Observe(_ context.Context, verb string, _ url.URL, d time.Duration) {
	a.h.WithLabelValues(verb).Observe(d.Seconds())
}

func init() { //nolint:gochecknoinits // registering collectors is the one sanctioned use
	metrics.Registry.MustRegister(releaseStageSeconds, clientRateLimiterSeconds, clientRequestSeconds)
	// controller-runtime has already called clientmetrics.Register (it runs once) with the
	// request counter only; the latency hooks are plain package variables.
	clientmetrics.RateLimiterLatency = latencyAdapter{clientRateLimiterSeconds}
	clientmetrics.RequestLatency = latencyAdapter{clientRequestSeconds}
}
