package gate

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Metrics are package-level collectors on controller-runtime's registry, the one exception
// to "no globals". Labels are bounded: never a node name.
var (
	gatedNodes = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "startupgate_gated_nodes",
		Help: "Nodes currently holding the startup taint and not yet released.",
	})
	holdSeconds = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "startupgate_hold_seconds",
		Help:    "Time from Node creation to release.",
		Buckets: prometheus.ExponentialBuckets(0.5, 2, 14), // 0.5 s .. ~68 min
	})
	releaseLatencySeconds = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "startupgate_release_latency_seconds",
		Help:    "Time from the node becoming ready (init Pods Ready) to the taint being removed.",
		Buckets: prometheus.ExponentialBuckets(0.005, 2, 14), // 5 ms .. ~41 s
	})
	releasesTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "startupgate_releases_total",
		Help: "Nodes released, by outcome (ready, timeout).",
	}, []string{"outcome"})
	timeoutsTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "startupgate_timeouts_total",
		Help: "Nodes whose maximum hold passed before they were ready, by policy (release, keep).",
	}, []string{"policy"})
	webhookRequests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "startupgate_webhook_requests_total",
		Help: "Node admission requests, by result (tainted, already_tainted, excluded, released, rejected).",
	}, []string{"result"})
	backfillsTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "startupgate_backfills_total",
		Help: "Backfill actions on nodes that came up untainted, by result (tainted, busy, undone).",
	}, []string{"result"})
	missingToleration = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "startupgate_component_missing_toleration",
		Help: "1 when a required component's DaemonSet does not tolerate the startup taint: its nodes can never be released.",
	}, []string{"component"})
	podGuardRequests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "startupgate_pod_guard_requests_total",
		Help: "Pod guard admission decisions, by result (allowed, denied).",
	}, []string{"result"})
)

func init() { //nolint:gochecknoinits // registering collectors is the one sanctioned use
	metrics.Registry.MustRegister(gatedNodes, holdSeconds, releaseLatencySeconds, releasesTotal,
		timeoutsTotal, webhookRequests, backfillsTotal, missingToleration, podGuardRequests)
}
