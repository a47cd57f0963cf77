package gate

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/startupgate/startupgate/gate/config"
)

// Metrics are package-level collectors on controller-runtime's registry, the one exception
// to "no globals". Labels are bounded: never a node name.
var (
	gatedNodes = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "startupgate_gated_nodes",
		Help: "Nodes a rule currently holds (dry-run rules: would hold), by rule.",
	}, []string{"rule"})
	holdSeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "startupgate_hold_seconds",
		Help:    "Time from Node creation to a rule's first release, by rule.",
		Buckets: prometheus.ExponentialBuckets(0.5, 2, 14), // 0.5 s .. ~68 min
	}, []string{"rule"})
	releaseLatencySeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "startupgate_release_latency_seconds",
		Help:    "Time from the node becoming ready (a rule's requirements holding) to the rule's taint being removed, by rule.",
		Buckets: prometheus.ExponentialBuckets(0.005, 2, 14), // 5 ms .. ~41 s
	}, []string{"rule"})
	releasesTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "startupgate_releases_total",
		Help: "First releases of a node by a rule, by rule and outcome (ready, timeout).",
	}, []string{"rule", "outcome"})
	timeoutsTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "startupgate_timeouts_total",
		Help: "Nodes whose maximum hold passed before they were ready, by rule and policy (release, keep, replace).",
	}, []string{"rule", "policy"})
	retaintsTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "startupgate_retaints_total",
		Help: "Taints a continuous rule put back on a released node, by rule.",
	}, []string{"rule"})
	dryRunTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "startupgate_dry_run_decisions_total",
		Help: "What dry-run rules would have done, by rule and decision (would_hold, would_release, would_replace, would_taint).",
	}, []string{"rule", "decision"})
	conditionTaintsTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "startupgate_condition_taints_total",
		Help: "Taints a condition rule put on or took off, by rule and action (tainted, cleared).",
	}, []string{"rule", "action"})
	conditionTaintedNodes = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "startupgate_condition_tainted_nodes",
		Help: "Nodes that carry a NoExecute condition rule's taint, counted when its eviction budget was last asked, by rule.",
	}, []string{"rule"})
	budgetExhausted = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "startupgate_budget_exhausted",
		Help: "1 when a NoExecute condition rule's eviction budget last held back a matching node, 0 when it last allowed one, by rule.",
	}, []string{"rule"})
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
	orphansLiftedTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "startupgate_orphans_lifted_total",
		Help: "Taints the gate placed that no rule has any more (a rule removed, given a new taint, or a dry run) and lifted after the grace period, by the record that placed them (the label rule names it).",
	}, []string{"rule"})
	nodeStates = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "startupgate_node_states",
		Help: "Nodes in each state under each rule, as the leader last decided them (the states of `gate status`), by rule and state.",
	}, []string{"rule", "state"})
	replacementsTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "startupgate_replacements_total",
		Help: "NodeClaims a rule with timeoutPolicy replace deleted for nodes that never warmed, by rule and NodePool.",
	}, []string{"rule", "nodepool"})
	replaceStopped = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "startupgate_replace_stopped",
		Help: "1 when a rule's storm guard last stopped a replacement in a NodePool (its nodes time out in a row), 0 when it last allowed one, by rule and NodePool.",
	}, []string{"rule", "nodepool"})
	regatesTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "startupgate_regates_total",
		Help: "Taints a rule with onReboot: gate put back on a released node that rebooted, by rule.",
	}, []string{"rule"})
	suspendedRules = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "startupgate_rule_suspended",
		Help: "1 when a rule is suspended (it writes nothing until resumed), 0 when it runs, by rule.",
	}, []string{"rule"})
	oldestHeldSeconds = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "startupgate_oldest_held_seconds",
		Help: "How long the node a rule has held longest has been held, as the leader saw it (0: none held), by rule. A steady scale-up keeps it near the warm-up time; a stuck node makes it grow.",
	}, []string{"rule"})
	excludedNodesReady = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "startupgate_excluded_nodes_ready",
		Help: "Ready nodes that match exclude, as this replica last read them: 0 means a gate whose Pods are all gone has no node that registers for them to come back on (failurePolicy Fail).",
	})
	onGatedNode = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "startupgate_on_gated_node",
		Help: "1 when this replica runs on a node exclude does not name (the webhook is called for such nodes), 0 otherwise or when its node is not known.",
	})
	podGuardRequests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "startupgate_pod_guard_requests_total",
		Help: "Pod guard answers, by result (allowed, denied, error) and reason (not-held, held, rebooted, unmet, pod-unread, ...; docs/operations.md).",
	}, []string{"result", "reason"})
)

func init() { //nolint:gochecknoinits // registering collectors is the one sanctioned use
	metrics.Registry.MustRegister(gatedNodes, holdSeconds, releaseLatencySeconds, releasesTotal,
		timeoutsTotal, retaintsTotal, dryRunTotal, conditionTaintsTotal, conditionTaintedNodes, budgetExhausted, webhookRequests, backfillsTotal, missingToleration, regatesTotal, orphansLiftedTotal, nodeStates, suspendedRules, podGuardRequests, replacementsTotal, replaceStopped,
		excludedNodesReady, onGatedNode, oldestHeldSeconds)
}

// RecordRules sets the per-rule gauges that the configuration alone decides: which rules
// are suspended.
func RecordRules(cfg *config.Config) {
	for _, rl := range cfg.EffectiveRules() {
		v := 0.0
		if rl.Suspend {
			v = 1
		}
		suspendedRules.WithLabelValues(rl.Name).Set(v)
	}
}
