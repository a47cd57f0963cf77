package rule

import (
	"fmt"
	"hash/fnv"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// A rule's record on a node is what the gate knows about the node under the rule's taint:
// its completion annotation (<completedAnnotation>.<record>), the boot, readiness, re-gate
// and replacement kept beside it (<...>_bootID, _readiness, _regatedAt, _replaced), and the
// mark of the taint it placed (<placedAnnotation>.<record>). The record is named after the
// taint, not the rule, so that every edit of a rule is one of three plain cases: a rename, or
// any edit that keeps the taint, keeps the record; a new key or effect, or a removed rule,
// leaves a record no rule owns (an orphan); an added rule has none and joins or adopts.

// DefaultRecord names the record of the config's top-level taint, the contract's: its
// completion annotation is the bare startup.k8s.io/completedAt, as before there were rules.
const DefaultRecord = "default"

// maxRecordName bounds a record's name, so that its longest key, the evidence annotation
// "completedAt.<record>_readiness", fits the 63 characters of an annotation's name.
const maxRecordName = 41

// RecordName names the record of taint t, when t is not the config's top-level taint
// (DefaultRecord): its key with "/" and "_" as "." and "-" (a "_" starts the suffixes), its
// effect appended unless NoSchedule, the common one. A name longer than 41 characters is the
// key's name part, cut, and a hash of the whole taint, so that two long keys never share one.
func RecordName(t corev1.Taint) string {
	name := strings.ReplaceAll(t.Key, "_", "-")
	if t.Effect != corev1.TaintEffectNoSchedule {
		name += "." + strings.ToLower(string(t.Effect))
	}
	if len(name) <= maxRecordName {
		return strings.ReplaceAll(name, "/", ".")
	}
	// Too long: the key's name part (what an operator recognises), cut, and a hash.
	_, short, _ := strings.Cut(name, "/")
	if short == "" {
		short = name
	}
	h := fnv.New32a()
	h.Write([]byte(t.Key + ":" + string(t.Effect)))
	return fmt.Sprintf("%s-%08x", short[:min(len(short), maxRecordName-9)], h.Sum32())
}

// Recorded reports whether the rule has a record of the node: it released it, or its taint is
// on.
func (r *Rule) Recorded(n *corev1.Node) bool { return r.Completed(n) || r.HasTaint(n) }

// dropUnowned removes what the records no rule of the config keeps (their taint gone from
// every rule: GateRecords) hold beside their completion, when their taint is off (no mark):
// the rule adopting the node has taken it, and a rule given their taint again later finds
// its completion with no boot or readiness, and records them afresh from the records kept
// up to date (StateBootUnrecorded) rather than read stale ones. The completion stays: it is
// written once (the contract's completedAt among them). A record whose taint is still on
// (an orphan in its grace period) stays whole: the taint's hold is its.
func (r *Rule) dropUnowned(n *corev1.Node) {
	if r.ReleasedAnnotation == "" || len(r.GateRecords) == 0 {
		return
	}
	marks := r.placedPrefix()
	for k := range n.Annotations {
		done, _, _ := strings.Cut(k, "_")
		if !completionOf(done, r.ReleasedAnnotation) || done == r.CompletedAnnotation || slices.Contains(r.GateRecords, done) {
			continue
		}
		record := DefaultRecord
		if done != r.ReleasedAnnotation {
			record = strings.TrimPrefix(done, r.ReleasedAnnotation+".")
		}
		if _, marked := n.Annotations[marks+record]; !marked && k != done {
			delete(n.Annotations, k)
		}
	}
}

// recordKeys are the suffixes of the annotations kept beside a completion annotation, the
// completion itself first.
var recordKeys = []string{"", bootSuffix, evidenceSuffix, regatedSuffix, replacedSuffix, unwarmedSuffix}

// unwarmedSuffix marks a record whose release did not rest on the rule's requirements: a
// release by hand (`gate release`), a backfill undone, an adoption, a timeout. The storm
// guard of timeoutPolicy replace does not count such a release as a node that warmed.
const unwarmedSuffix = "_unwarmed"

// markUnwarmed records, with a first completion made now, that it did not rest on the rule's
// requirements.
func (r *Rule) markUnwarmed(n *corev1.Node, first bool) {
	if first {
		setAnnotation(n, r.CompletedAnnotation+unwarmedSuffix, "true")
	}
}

// Legacy reports whether the node carries a key of the record an earlier release kept under
// the rule's name (Migrate moves it).
func (r *Rule) Legacy(n *corev1.Node) bool {
	has := func(prefix string) bool {
		for k := range n.Annotations {
			if k == prefix || strings.HasPrefix(k, prefix+"_") {
				return true
			}
		}
		return false
	}
	return r.LegacyCompleted != "" && has(r.LegacyCompleted) || r.LegacyPlaced != "" && has(r.LegacyPlaced)
}

// Migrate moves the record that an earlier release kept under the rule's name (its
// LegacyCompleted and LegacyPlaced keys) to the rule's record, named after its taint. It
// reports whether it changed the node. A key the record already has is kept, and the legacy
// one dropped: the record is the newer word.
func (r *Rule) Migrate(n *corev1.Node) bool {
	moved := false
	move := func(from, to string) {
		v, ok := n.Annotations[from]
		if from == to || !ok {
			return
		}
		if _, has := n.Annotations[to]; !has {
			n.Annotations[to] = v
		}
		delete(n.Annotations, from)
		moved = true
	}
	if r.LegacyCompleted != "" {
		for _, s := range recordKeys {
			move(r.LegacyCompleted+s, r.CompletedAnnotation+s)
		}
	}
	if r.LegacyPlaced != "" {
		move(r.LegacyPlaced, r.PlacedAnnotation)
	}
	return moved
}
