package rule

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// Readiness evidence, for a rule that gates reboots. A rebooted node's warm-up must run
// again, and the proof that it did is an init Pod Ready on containers the new boot started.
// Comparing a Pod's Ready time with the moment the gate saw the reboot compares the
// kubelet's clock with the gate's, and misses a warm-up the gate was not there to see (a
// gate down, failing over or suspended through the reboot). So the rule records, with the
// boot, what the readiness it counted was: a fingerprint of each Ready init Pod's
// identity and containers (UID, container IDs, restart counts). A kubelet starts new
// containers after a reboot, with new IDs and higher counts, so their readiness has a
// fingerprint the record does not hold: that, and only that, is readiness of a later boot.
// A container ID never comes back, so a fingerprint once recorded never counts again.

// fingerprintLen is how many hex digits of the hash a fingerprint keeps: 48 bits, so that
// two containers of one node never share one in practice, and a record of a few Pods stays
// a short annotation.
const fingerprintLen = 12

// maxEvidence bounds the fingerprints a record keeps: each reboot while re-gated adds the
// Pods then Ready, and the oldest are the ones that cannot come back.
const maxEvidence = 32

// Fingerprint identifies the containers a Pod runs now: its UID, and each container's name,
// ID and restart count.
func Fingerprint(p *corev1.Pod) string {
	h := sha256.New()
	h.Write([]byte(p.UID))
	statuses := slices.Clone(p.Status.ContainerStatuses)
	slices.SortFunc(statuses, func(a, b corev1.ContainerStatus) int { return strings.Compare(a.Name, b.Name) })
	for _, c := range statuses {
		if c.Name == "" {
			continue // a placeholder for a container with no status yet (the gate's trimmed Pods)
		}
		fmt.Fprintf(h, "\x00%s\x00%s\x00%d", c.Name, c.ContainerID, c.RestartCount)
	}
	return hex.EncodeToString(h.Sum(nil))[:fingerprintLen]
}

// EvidenceAnnotation holds the fingerprints of the readiness the rule recorded with the
// boot in BootAnnotation: readiness that does not count on any later boot.
func (r *Rule) EvidenceAnnotation() string { return r.CompletedAnnotation + evidenceSuffix }

// Evidence is the set of fingerprints recorded on the node, or nil when none was recorded
// (a node released before the rule recorded evidence).
func (r *Rule) Evidence(n *corev1.Node) map[string]bool {
	v, ok := n.Annotations[r.EvidenceAnnotation()]
	if !ok {
		return nil
	}
	out := map[string]bool{}
	for _, f := range fingerprints(v) {
		out[f] = true
	}
	return out
}

// pastReadiness is the readiness that does not count on a boot later than the record's: the
// record's own (nil: none recorded), and what every other record of the gate's holds that
// was made on the same boot. A rule given another taint and then its own again did not see
// what the other record saw meanwhile (a restart on that boot), and a container ID never
// comes back. A record of a later boot is left out: its readiness may be the boot the node
// runs now.
func (r *Rule) pastReadiness(n *corev1.Node, own map[string]bool) map[string]bool {
	if own == nil {
		return nil
	}
	boot := n.Annotations[r.BootAnnotation()]
	out := maps.Clone(own)
	for _, o := range r.otherRecords(n) {
		if o.boot != boot {
			continue
		}
		for _, f := range o.evidence {
			out[f] = true
		}
	}
	return out
}

// fingerprints reads an evidence annotation's value: the fingerprints, comma-separated.
func fingerprints(v string) []string {
	return slices.DeleteFunc(strings.Split(v, ","), func(f string) bool { return f == "" })
}

// setEvidence records the fingerprints, sorted, the newest kept when they are too many.
func (r *Rule) setEvidence(n *corev1.Node, prints []string) {
	if len(prints) > maxEvidence {
		prints = prints[len(prints)-maxEvidence:]
	}
	prints = slices.Clone(prints)
	slices.Sort(prints)
	setAnnotation(n, r.EvidenceAnnotation(), strings.Join(slices.Compact(prints), ","))
}

// addEvidence adds fingerprints to the record: readiness that, seen with a boot it may not
// belong to, must not count for the boot the node runs now.
func (r *Rule) addEvidence(n *corev1.Node, prints []string) {
	var all []string
	for f := range r.Evidence(n) {
		all = append(all, f)
	}
	slices.Sort(all)
	for _, f := range prints {
		if !slices.Contains(all, f) {
			all = append(all, f)
		}
	}
	r.setEvidence(n, all)
}

// readyPrints are the fingerprints of the rule's counted init Pods on the node that are
// ready now, sorted: what a release records.
func (r *Rule) readyPrints(rd Readiness, in Input) []string {
	var out []string
	for i := range r.compiled().components {
		comp := &r.compiled().components[i]
		for _, p := range in.Pods {
			if counts(p, in.Node, comp) && podReady(p, rd) {
				out = append(out, Fingerprint(p))
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// unrecorded reports whether some ready Pod's fingerprint is not in the record.
func unrecorded(prints []string, record map[string]bool) bool {
	for _, f := range prints {
		if !record[f] {
			return true
		}
	}
	return false
}
