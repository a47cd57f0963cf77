package bench

import (
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/startupgate/startupgate/sim/check"
)

// BindingBurst is the binding-burst phase in bench.json: its shape, every run, and per mode
// the medians of its complete rounds.
type BindingBurst struct {
	Nodes  int `json:"nodes"`
	Pods   int `json:"pods"`
	Extra  int `json:"extra_nodes"`
	Rounds int `json:"rounds"`
	// GuardWebhook is the shipped Pod guard's webhook name: the admission metrics' and the
	// denials' name for it.
	GuardWebhook string      `json:"guard_webhook"`
	Modes        []BurstMode `json:"modes"`
	Runs         []BurstRun  `json:"runs"`
}

// BurstRun is one binding-burst run.
type BurstRun struct {
	Run   string `json:"run"`
	Mode  string `json:"mode"`
	Round int    `json:"round"`
	// Pods were asked for; Bound is how many the audit log saw bound, BindAttempts every
	// pods/binding CREATE for them, answered or refused.
	Pods         int `json:"pods"`
	Bound        int `json:"bound"`
	BindAttempts int `json:"bind_attempts"`
	// Nodes and Released count every node of the run, the burst's extra nodes included.
	Nodes    int `json:"nodes"`
	Released int `json:"released"`
	// GateRestarts counts the gate's process exiting on its own (a lost leader lease) and
	// started again; the guard answers nothing until it is back.
	GateRestarts int `json:"gate_restarts"`
	// ScaleToFirstBindS and ScaleToLastBindS are from the scale's receipt by the apiserver
	// to the first and the last binding stored.
	ScaleToFirstBindS float64 `json:"scale_to_first_bind_s"`
	ScaleToLastBindS  float64 `json:"scale_to_last_bind_s"`
	// BindMS is every binding attempt's time in the apiserver, from its receipt to its
	// answer (audit log): admission, the guard's call among it, and storage.
	BindMS check.Percentiles `json:"bind_in_apiserver_ms"`
	// BoundPerS is Bound over first to last binding; BoundPerSFromScale, Bound over the
	// scale to the last binding.
	BoundPerS          float64 `json:"bound_per_s"`
	BoundPerSFromScale float64 `json:"bound_per_s_from_scale"`
	// CreateToBoundMS: each burst Pod's creation to its binding, as one watch of the Pods
	// saw both, over CreateToBoundN Pods (SeenBound more were first seen bound, untimed).
	CreateToBoundMS check.Percentiles `json:"create_to_bound_ms"`
	CreateToBoundN  int               `json:"create_to_bound_n"`
	SeenBound       int               `json:"seen_bound,omitempty"`
	// AdmissionMS is the guard's admission latency as the apiserver times it (every call:
	// the burst's Pod CREATEs and bindings alike), from AdmissionFrom (the scale, or the run's
	// start if the scale was missed) to the run's end. FailOpen counts the calls the
	// apiserver let through because the guard did not answer (failurePolicy Ignore).
	AdmissionMS   Quantiles `json:"guard_admission_ms"`
	AdmissionFrom string    `json:"guard_admission_from,omitempty"`
	FailOpen      int       `json:"guard_fail_open"`
	// GateCalls are the gate's API requests (user agent, audit log) by verb and resource
	// from the scale to the last binding; GateCallsPerBinding divides them by Bound.
	GateCalls           map[string]int     `json:"gate_calls,omitempty"`
	GateCallsPerBinding map[string]float64 `json:"gate_calls_per_binding,omitempty"`
	// Rejected are the burst's refused bindings, by cause.
	Rejected Rejections `json:"rejected"`
	// Extra nodes joined as the burst started, ExtraReleased of them were released, and
	// ExtraReleaseMS is the release latency of ExtraTimed of them, by the apiserver's audit
	// log: from the fake kubelet's last status write of the node's init Pods stored before
	// the release, to the gate's release write received.
	Extra          int               `json:"extra_nodes"`
	ExtraReleased  int               `json:"extra_released"`
	ExtraTimed     int               `json:"extra_timed"`
	ExtraReleaseMS check.Percentiles `json:"extra_release_ms"`
}

// Complete reports whether every Pod was bound and every node released; only such a run's figures count in
// the medians. A Pod is bound if the audit log has its binding stored or the watch saw it
// bound: a binding the apiserver answered 504 (its own timeout) can still have been stored.
func (r BurstRun) Complete() bool {
	bound := r.Bound == r.Pods || r.CreateToBoundN+r.SeenBound == r.Pods
	return r.Pods > 0 && bound && r.Nodes > 0 && r.Released == r.Nodes
}

// Rejections are refused bindings by cause: the guard's decision (the node is held, or
// its rule's taint is coming back), the guard's own error (a read that failed or ran out
// of time), and anything else (a conflict, a throttled request, a guard message of neither
// kind). Samples holds the first message of each kind, with its HTTP code.
type Rejections struct {
	Decision   int               `json:"guard_decision"`
	GuardError int               `json:"guard_error"`
	Other      int               `json:"other"`
	Samples    map[string]string `json:"samples,omitempty"`
}

// Rejection kinds, the keys of Rejections.Samples.
const (
	rejectDecision = "guard decision"
	rejectError    = "guard error"
	rejectOther    = "other"
)

// guardErrorPhrases are in the guard's denials that come from its own failure;
// guardDecisionPhrases in those that come from the node's state. An error is looked for
// first: "...cannot be read now (...), so whether rule x's taint is coming back is unknown"
// is an error, not a decision.
var (
	guardErrorPhrases    = []string{"reading pod", "context deadline exceeded", "cannot be read", "decoding "}
	guardDecisionPhrases = []string{"still holds startup taint", "coming back", "do not hold"}
)

// rejectionOf is the kind of a refused binding's message: the guard's if the apiserver
// says the guard's webhook denied it.
func rejectionOf(guard, message string) string {
	if !strings.Contains(message, fmt.Sprintf("admission webhook %q denied the request", guard)) {
		return rejectOther
	}
	has := func(phrases []string) bool {
		return slices.ContainsFunc(phrases, func(p string) bool { return strings.Contains(message, p) })
	}
	switch {
	case has(guardErrorPhrases):
		return rejectError
	case has(guardDecisionPhrases):
		return rejectDecision
	}
	return rejectOther
}

func (rj *Rejections) add(kind string, code int, message string) {
	switch kind {
	case rejectDecision:
		rj.Decision++
	case rejectError:
		rj.GuardError++
	default:
		rj.Other++
	}
	rj.sample(kind, fmt.Sprintf("%d: %s", code, message))
}

func (rj *Rejections) sample(kind, s string) {
	if _, ok := rj.Samples[kind]; ok {
		return
	}
	if rj.Samples == nil {
		rj.Samples = map[string]string{}
	}
	rj.Samples[kind] = s
}

func (rj *Rejections) merge(o Rejections) {
	rj.Decision += o.Decision
	rj.GuardError += o.GuardError
	rj.Other += o.Other
	for _, k := range sortedKeys(o.Samples) {
		rj.sample(k, o.Samples[k])
	}
}

func (rj Rejections) String() string {
	return fmt.Sprintf("%d / %d / %d", rj.Decision, rj.GuardError, rj.Other)
}

// gateCall is one of the gate's requests: when the apiserver received it, and what it was.
type gateCall struct {
	at   time.Time
	call string
}

// callName is a request's verb and resource, as the report counts them: "get pods",
// "create pods/binding".
func callName(verb, resource, subresource string) string {
	if subresource != "" {
		resource += "/" + subresource
	}
	if resource == "" {
		return verb
	}
	return verb + " " + resource
}

// bindingEvent is one pods/binding CREATE in a binding-burst run's namespace: for which Pod,
// how it was answered, when it arrived and when its answer was complete.
type bindingEvent struct {
	ns, pod        string
	code           int
	message        string
	received, done time.Time
}

// scaleEvent is the simulator's PATCH of a workload in a binding-burst run's namespace.
type scaleEvent struct {
	ns, workload string
	at           time.Time
}

// statusEvent is a stored status write of the fake kubelet to a Pod of a binding-burst
// run's namespace: when its answer was complete.
type statusEvent struct {
	ns, pod string
	done    time.Time
}

// fromAudit fills every run's audit figures (metas[i] is Runs[i]'s), then the modes'
// summaries.
func (bb *BindingBurst) fromAudit(a auditTally, metas []burstMeta) {
	byNS := map[string][]bindingEvent{}
	for _, e := range a.bindings {
		byNS[e.ns] = append(byNS[e.ns], e)
	}
	scaled := map[string]time.Time{}
	for _, e := range a.scales {
		if _, ok := scaled[e.ns]; !ok && e.workload == burstWorkload {
			scaled[e.ns] = e.at
		}
	}
	statuses := map[string][]time.Time{} // by namespace/pod
	for _, e := range a.podStatus {
		statuses[e.ns+"/"+e.pod] = append(statuses[e.ns+"/"+e.pod], e.done)
	}
	for i := range bb.Runs {
		if i >= len(metas) || metas[i].ns == "" {
			continue
		}
		m, r := metas[i], &bb.Runs[i]
		r.fromEvents(byNS[m.ns], scaled[m.ns], a.gateCalls, bb.GuardWebhook)
		r.ExtraReleaseMS, r.ExtraTimed = releaseLatencies(m.ns, m.extraInit, statuses, a.first)
	}
	bb.summarize()
}

// releaseLatencies times each node's release by the apiserver's clock: from the last
// stored status write of its init Pods before the release (the one that made the last of
// them Ready) to the receipt of the gate's first successful write to the node (the
// release). An init Pod with no status write before the release is left out (with two
// rules, the first release is one rule's, and the other's component may not have started
// yet); a node with no release write, or none of its init Pods written before it, is not
// timed. initPods names each node's init Pods in namespace ns; statuses holds every stored
// status write by namespace/pod.
func releaseLatencies(ns string, initPods map[string][]string, statuses map[string][]time.Time, first map[string]writeTimes) (check.Percentiles, int) {
	var ds []time.Duration
	for node, pods := range initPods {
		w, ok := first[node]
		if !ok || len(pods) == 0 {
			continue
		}
		var ready time.Time
		for _, p := range pods {
			var last time.Time
			for _, t := range statuses[ns+"/"+p] {
				if !t.After(w.received) && t.After(last) {
					last = t
				}
			}
			if last.After(ready) {
				ready = last
			}
		}
		if !ready.IsZero() {
			ds = append(ds, w.received.Sub(ready))
		}
	}
	return roundPercentiles(check.PercentilesOf(ds)), len(ds)
}

// fromEvents computes a run's figures from its namespace's bindings, the time its
// workload was scaled (zero: not seen; the window then opens at the first binding) and
// the gate's requests (the whole log's, in order).
func (r *BurstRun) fromEvents(bindings []bindingEvent, scaleAt time.Time, calls []gateCall, guard string) {
	bound := map[string]time.Time{}
	var first, last, firstTry time.Time
	var inServer []time.Duration
	for _, e := range bindings {
		if !strings.HasPrefix(e.pod, burstWorkload+"-") {
			continue // an init Pod's
		}
		r.BindAttempts++
		inServer = append(inServer, e.done.Sub(e.received))
		if firstTry.IsZero() || e.received.Before(firstTry) {
			firstTry = e.received
		}
		if e.code < 200 || e.code >= 300 {
			r.Rejected.add(rejectionOf(guard, e.message), e.code, e.message)
			continue
		}
		if _, ok := bound[e.pod]; ok {
			continue
		}
		bound[e.pod] = e.done
		if first.IsZero() || e.done.Before(first) {
			first = e.done
		}
		if e.done.After(last) {
			last = e.done
		}
	}
	r.Bound = len(bound)
	r.BindMS = roundPercentiles(check.PercentilesOf(inServer))
	if r.Bound == 0 {
		return
	}
	if d := last.Sub(first).Seconds(); d > 0 {
		r.BoundPerS = round2(float64(r.Bound) / d)
	}
	from := firstTry
	if !scaleAt.IsZero() {
		from = scaleAt
		r.ScaleToFirstBindS, r.ScaleToLastBindS = round2(first.Sub(scaleAt).Seconds()), round2(last.Sub(scaleAt).Seconds())
		if d := last.Sub(scaleAt).Seconds(); d > 0 {
			r.BoundPerSFromScale = round2(float64(r.Bound) / d)
		}
	}
	r.GateCalls = map[string]int{}
	for _, c := range calls {
		if !c.at.Before(from) && !c.at.After(last) {
			r.GateCalls[c.call]++
		}
	}
	r.GateCallsPerBinding = map[string]float64{}
	for c, n := range r.GateCalls {
		r.GateCallsPerBinding[c] = round2(float64(n) / float64(r.Bound))
	}
}

// BurstMode is one mode's summary over its rounds: the median of each figure over the
// complete rounds that measured it, rejections and fail-opens summed over every round, and
// per round the ratio to guard-off's run of the same round.
type BurstMode struct {
	Mode string `json:"mode"`
	// Runs is how many rounds ran it; Complete, how many bound every Pod and released every
	// node.
	Runs               int     `json:"runs"`
	Complete           int     `json:"complete"`
	BoundPerS          float64 `json:"bound_per_s"`
	BoundPerSFromScale float64 `json:"bound_per_s_from_scale"`
	CreateToBoundP50MS float64 `json:"create_to_bound_p50_ms"`
	CreateToBoundP99MS float64 `json:"create_to_bound_p99_ms"`
	BindP50MS          float64 `json:"bind_in_apiserver_p50_ms"`
	BindP99MS          float64 `json:"bind_in_apiserver_p99_ms"`
	AdmissionP50MS     float64 `json:"guard_admission_p50_ms"`
	AdmissionP99MS     float64 `json:"guard_admission_p99_ms"`
	// AdmissionBucketMS is the widest histogram bucket the complete runs' p99 fell in
	// (-1: above the largest): the apiserver's buckets are coarse, and a p99 is
	// interpolated inside its bucket.
	AdmissionBucketMS   float64            `json:"guard_admission_p99_bucket_le_ms,omitempty"`
	GateCallsPerBinding map[string]float64 `json:"gate_calls_per_binding,omitempty"`
	Rejected            Rejections         `json:"rejected"`
	FailOpen            int                `json:"guard_fail_open"`
	GateRestarts        int                `json:"gate_restarts"`
	ExtraReleaseP99MS   float64            `json:"extra_release_p99_ms"`
	// BoundPerSRatio and CreateToBoundP99Ratio are this mode's figure over guard-off's, per
	// round where both runs are complete.
	BoundPerSRatio        RatioSummary `json:"bound_per_s_ratio"`
	CreateToBoundP99Ratio RatioSummary `json:"create_to_bound_p99_ratio"`
}

// summarize computes Modes from Runs.
func (bb *BindingBurst) summarize() {
	bb.Modes = nil
	off := map[int]BurstRun{}
	for _, r := range bb.Runs {
		if r.Mode == burstGuardOff && r.Complete() {
			off[r.Round] = r
		}
	}
	for _, mode := range burstModes {
		m := BurstMode{Mode: mode}
		var runs []BurstRun
		for _, r := range bb.Runs {
			if r.Mode != mode {
				continue
			}
			m.Runs++
			m.Rejected.merge(r.Rejected)
			m.FailOpen += r.FailOpen
			m.GateRestarts += r.GateRestarts
			if r.Complete() {
				runs = append(runs, r)
			}
		}
		if m.Runs == 0 {
			continue
		}
		m.Complete = len(runs)
		med := func(f func(BurstRun) (float64, bool)) float64 {
			var vs []float64
			for _, r := range runs {
				if v, ok := f(r); ok {
					vs = append(vs, v)
				}
			}
			return median(vs)
		}
		m.BoundPerS = med(func(r BurstRun) (float64, bool) { return r.BoundPerS, r.BoundPerS > 0 })
		m.BoundPerSFromScale = med(func(r BurstRun) (float64, bool) { return r.BoundPerSFromScale, r.BoundPerSFromScale > 0 })
		m.CreateToBoundP50MS = med(func(r BurstRun) (float64, bool) { return r.CreateToBoundMS.P50, r.CreateToBoundN > 0 })
		m.CreateToBoundP99MS = med(func(r BurstRun) (float64, bool) { return r.CreateToBoundMS.P99, r.CreateToBoundN > 0 })
		m.BindP50MS = med(func(r BurstRun) (float64, bool) { return r.BindMS.P50, r.BindAttempts > 0 })
		m.BindP99MS = med(func(r BurstRun) (float64, bool) { return r.BindMS.P99, r.BindAttempts > 0 })
		m.AdmissionP50MS = med(func(r BurstRun) (float64, bool) { return r.AdmissionMS.P50, r.AdmissionMS.Count > 0 })
		m.AdmissionP99MS = med(func(r BurstRun) (float64, bool) { return r.AdmissionMS.P99, r.AdmissionMS.Count > 0 })
		for _, r := range runs {
			if b := r.AdmissionMS.BucketMS; r.AdmissionMS.Count > 0 && m.AdmissionBucketMS >= 0 && (b < 0 || b > m.AdmissionBucketMS) {
				m.AdmissionBucketMS = b
			}
		}
		m.ExtraReleaseP99MS = med(func(r BurstRun) (float64, bool) { return r.ExtraReleaseMS.P99, r.ExtraTimed > 0 })
		calls := map[string]bool{}
		for _, r := range runs {
			for c := range r.GateCallsPerBinding {
				calls[c] = true
			}
		}
		for c := range calls {
			if m.GateCallsPerBinding == nil {
				m.GateCallsPerBinding = map[string]float64{}
			}
			m.GateCallsPerBinding[c] = med(func(r BurstRun) (float64, bool) { return r.GateCallsPerBinding[c], r.GateCallsPerBinding != nil })
		}
		if mode != burstGuardOff {
			var bps, c99 []Pair
			for _, r := range runs {
				o, ok := off[r.Round]
				if !ok {
					continue
				}
				if r.BoundPerS > 0 && o.BoundPerS > 0 {
					bps = append(bps, Pair{Ratio: round2(r.BoundPerS / o.BoundPerS)})
				}
				if r.CreateToBoundN > 0 && o.CreateToBoundN > 0 && o.CreateToBoundMS.P99 > 0 {
					c99 = append(c99, Pair{Ratio: round2(r.CreateToBoundMS.P99 / o.CreateToBoundMS.P99)})
				}
			}
			m.BoundPerSRatio, m.CreateToBoundP99Ratio = summarize(bps), summarize(c99)
		}
		bb.Modes = append(bb.Modes, m)
	}
}

// median of vs (0 when empty), the mean of the middle two for an even count.
func median(vs []float64) float64 {
	if len(vs) == 0 {
		return 0
	}
	s := slices.Clone(vs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return round2((s[len(s)/2-1] + s[len(s)/2]) / 2)
}

// callsFigure is calls per binding, their total first and then each kind, the most
// frequent first, leaving out those under 0.01.
func callsFigure(perBinding map[string]float64) string {
	if perBinding == nil {
		return notMeasured
	}
	type kv struct {
		k string
		v float64
	}
	var all []kv
	total := 0.0
	for k, v := range perBinding {
		total += v
		if v >= 0.01 {
			all = append(all, kv{k, v})
		}
	}
	sort.Slice(all, func(i, j int) bool {
		if all[i].v != all[j].v {
			return all[i].v > all[j].v
		}
		return all[i].k < all[j].k
	})
	parts := make([]string, 0, len(all))
	for _, x := range all {
		parts = append(parts, fmt.Sprintf("%s %.2f", x.k, x.v))
	}
	if len(parts) == 0 {
		return fmt.Sprintf("%.2f", total)
	}
	return fmt.Sprintf("%.2f (%s)", total, strings.Join(parts, ", "))
}

func msPair(p50, p99 float64, ok bool) string {
	if !ok {
		return notMeasured
	}
	return fmt.Sprintf("%.0f / %.0f", p50, p99)
}

func perS(v float64) string {
	if v == 0 {
		return notMeasured
	}
	return fmt.Sprintf("%.0f", v)
}

func roundsRatio(s RatioSummary) string {
	if s.N == 0 {
		return notMeasured
	}
	return fmt.Sprintf("%.2f (%.2f–%.2f, %d)", s.Median, s.Min, s.Max, s.N)
}

// admissionPair is the guard's admission p50 / p99, or why there is none (a histogram's
// p99 is never 0 when it holds a call), with the bucket the p99 is interpolated in.
func admissionPair(mode string, p50, p99, bucketMS float64) string {
	switch {
	case mode == burstGuardOff:
		return "no guard"
	case p99 == 0:
		return notMeasured
	}
	return fmt.Sprintf("%.0f / %.0f (%s)", p50, p99, bucketOf(bucketMS))
}

// bucketOf names a p99's histogram bucket.
func bucketOf(bucketMS float64) string {
	if bucketMS < 0 {
		return "above the largest bucket"
	}
	return fmt.Sprintf("≤ %g ms bucket", bucketMS)
}

// burstModeRows are the summary table's header and rows, for bench.md and the page.
func (bb *BindingBurst) burstModeRows() ([]string, [][]string) {
	head := []string{"mode", "complete rounds", "Pods bound/s, first to last bind", "Pods bound/s, scale to last bind",
		"create → bound p50 / p99 (ms)", "binding in the apiserver p50 / p99 (ms)", "guard admission p50 / p99 (ms)", "gate API calls per binding (by verb and resource)",
		"bindings rejected: guard decision / guard error / other (all rounds)", "guard calls failed open (all rounds)", "gate restarts (all rounds)",
		"release p99 of the nodes joined in the burst (ms)", "bound/s ÷ guard-off (median, range, rounds)", "create → bound p99 ÷ guard-off"}
	var rows [][]string
	for _, m := range bb.Modes {
		ok := m.Complete > 0
		extra := notMeasured
		if ok && bb.Extra > 0 && m.ExtraReleaseP99MS > 0 {
			extra = fmt.Sprintf("%.0f", m.ExtraReleaseP99MS)
		}
		ratioB, ratioC := roundsRatio(m.BoundPerSRatio), roundsRatio(m.CreateToBoundP99Ratio)
		if m.Mode == burstGuardOff {
			ratioB, ratioC = "1 (reference)", "1 (reference)"
		}
		calls := notMeasured
		if ok {
			calls = callsFigure(m.GateCallsPerBinding)
		}
		rows = append(rows, []string{m.Mode, fmt.Sprintf("%d of %d", m.Complete, m.Runs), perS(m.BoundPerS), perS(m.BoundPerSFromScale),
			msPair(m.CreateToBoundP50MS, m.CreateToBoundP99MS, ok && m.CreateToBoundP99MS > 0), msPair(m.BindP50MS, m.BindP99MS, ok && m.BindP99MS > 0),
			admissionPair(m.Mode, m.AdmissionP50MS, m.AdmissionP99MS, m.AdmissionBucketMS), calls, m.Rejected.String(),
			fmt.Sprint(m.FailOpen), fmt.Sprint(m.GateRestarts), extra, ratioB, ratioC})
	}
	return head, rows
}

func writeTable(w io.Writer, head []string, rows [][]string) {
	fmt.Fprintf(w, "| %s |\n|---|%s\n", strings.Join(head, " | "), strings.Repeat("---:|", len(head)-1))
	for _, r := range rows {
		fmt.Fprintf(w, "| %s |\n", strings.Join(r, " | "))
	}
}

// writeBindingBurst writes the binding-burst section of bench.md.
func (r *Report) writeBindingBurst(w io.Writer) {
	bb := r.BindingBurst
	if bb == nil {
		if !slices.Contains(r.Skipped, PhaseBindingBurst) {
			fmt.Fprintf(w, "\nBinding burst: %s.\n", notMeasured)
		}
		return
	}
	bb.summarize() // from the runs, so that a saved bench.json renders with today's summary
	fmt.Fprintf(w, "\nBinding burst: %d released nodes, then %d Pods at once (a Deployment scaled from 0, 10m CPU each), and %d more nodes joining as it starts; "+
		"the scheduler at its configured QPS; %d rounds, each mode once per round in rotated order. Node admission is the policy in every mode, "+
		"so the Pod guard (webhook %q) is the gate's one webhook. Medians of the complete rounds (every Pod bound, every node released); "+
		"rejections and fail-opens are totals over every round.\n\n", bb.Nodes, bb.Pods, bb.Extra, bb.Rounds, bb.GuardWebhook)
	head, rows := bb.burstModeRows()
	writeTable(w, head, rows)
	fmt.Fprintln(w, "\nBinding-burst runs:")
	fmt.Fprintln(w)
	var runRows [][]string
	for _, x := range bb.Runs {
		runRows = append(runRows, []string{"`" + x.Run + "`", x.Mode, fmt.Sprint(x.Round), fmt.Sprintf("%d / %d (%d attempts)", x.Bound, x.Pods, x.BindAttempts),
			fmt.Sprintf("%d / %d", x.Released, x.Nodes), fmt.Sprintf("%.1f / %.1f", x.ScaleToFirstBindS, x.ScaleToLastBindS),
			perS(x.BoundPerS), perS(x.BoundPerSFromScale),
			msPair(x.CreateToBoundMS.P50, x.CreateToBoundMS.P99, x.CreateToBoundN > 0) + fmt.Sprintf(" (%d)", x.CreateToBoundN),
			msPair(x.BindMS.P50, x.BindMS.P99, x.BindAttempts > 0),
			burstAdmission(x), callsFigure(x.GateCallsPerBinding), x.Rejected.String(), fmt.Sprint(x.FailOpen), fmt.Sprint(x.GateRestarts),
			msPair(x.ExtraReleaseMS.P50, x.ExtraReleaseMS.P99, x.ExtraTimed > 0) + fmt.Sprintf(" (%d released, %d timed, of %d)", x.ExtraReleased, x.ExtraTimed, x.Extra)})
	}
	writeTable(w, []string{"run", "mode", "round", "Pods bound", "nodes released", "scale to first / last bind (s)", "bound/s, first to last",
		"bound/s, from scale", "create → bound p50 / p99 (ms) (Pods)", "binding in the apiserver p50 / p99 (ms)", "guard admission p50 / p99 (ms)", "gate calls per binding",
		"rejected: decision / error / other", "failed open", "gate restarts", "release p50 / p99 of the nodes joined in the burst (ms)"}, runRows)
	for _, m := range bb.Modes {
		for _, k := range []string{rejectDecision, rejectError, rejectOther} {
			if s, ok := m.Rejected.Samples[k]; ok {
				fmt.Fprintf(w, "\n%s, a binding rejected (%s): `%s`\n", m.Mode, k, s)
			}
		}
	}
	fmt.Fprint(w, "\nHow: bindings, their answers and the scale are the apiserver's audit log (a binding's time is when its answer was complete; "+
		"its time in the apiserver, every attempt's, from its receipt to its answer); "+
		"create → bound is one watch of the burst's Pods, which saw each created and bound (its lag counts at both ends); "+
		"the guard's admission latency is the apiserver's apiserver_admission_webhook_admission_duration_seconds for the guard's webhook, "+
		"from a scrape taken once the scale is seen to the run's end, over every call then: bindings, and those Pod CREATEs not yet admitted by the scrape "+
		"(the count beside each run's says how many: at most the binding attempts, the extra nodes' init Pods and the burst's Pod CREATEs) "+
		"(its buckets end at 5, 25, 100, 500, 1000, 2500, 10000 and 25000 ms, and a percentile is interpolated linearly inside its bucket: "+
		"a p99 between 2500 and 10000 ms says that over 1% of the calls took more than 2.5 s, the webhook's 3 s timeout among them, not that they took 9 s); "+
		"the gate's calls are every request with the gate's user agent from the scale to the last binding (its releases of the extra nodes, "+
		"its lease renewals and its events included) over the Pods bound; the release latency of the nodes joined in the burst is the audit log's too: "+
		"from the fake kubelet's last status write of the node's init Pods stored before the release, to the gate's release write received.\n")
}

func burstAdmission(x BurstRun) string {
	if x.Mode == burstGuardOff {
		return "no guard"
	}
	if x.AdmissionMS.Count == 0 {
		return notMeasured
	}
	s := fmt.Sprintf("%.0f / %.0f (%s, %d calls", x.AdmissionMS.P50, x.AdmissionMS.P99, bucketOf(x.AdmissionMS.BucketMS), x.AdmissionMS.Count)
	if x.AdmissionFrom != "" && x.AdmissionFrom != "scale" {
		s += ", from the " + x.AdmissionFrom
	}
	return s + ")"
}
