package model

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/startupgate/startupgate/gate/rule"
)

// world is the model: the Node as the API holds it, the init Pod's containers, the rule's
// config, and what the gate last saw. Every field but path is part of the state (key).
type world struct {
	node *corev1.Node
	// boot counts the node's boots; start counts container starts; startBoot is the boot
	// the current containers started on; ready says they are Ready.
	boot, start, startBoot int
	ready                  bool
	// warmedBoot is the boot on which the warm-up last completed (-1: none yet); a
	// container that crashes after it does not undo it (a startup rule never re-taints).
	warmedBoot int
	// shown is the start the Pod's status shows, and whether Ready: after a reboot the
	// kubelet reports the new boot first and the new containers after.
	shown      int
	shownReady bool
	suspend    bool
	ignore     bool // onReboot: ignore
	rekeyed    bool // the rule's taint is RekeyedTaint, not Taint
	renamed    bool // the rule is named cni-renamed, not cni
	// heldSuspended: the node was held when the rule was suspended; suspending never
	// releases.
	heldSuspended bool
	// seen is the Pod as the gate last saw it: seenShown and seenReady, when seenAny.
	seenAny, seenReady bool
	seenShown          int
	// The rest is per record (index: rec), as each record is its own rule's: restartUnseen,
	// containers Ready on the released node since the record's rule last recorded readiness;
	// rebootedUnseen, the node rebooted since the record's rule, which re-gated it, last
	// decided; early and stranded, the path has reached that limit for the record.
	restartUnseen, rebootedUnseen [2]bool
	early, stranded               [2]bool
	// path is the events that led here (not part of the state).
	path *step
}

// step is one event of a path, and the path before it.
type step struct {
	event string
	prev  *step
}

func (s *step) String() string {
	var out []string
	for ; s != nil; s = s.prev {
		out = append(out, s.event)
	}
	slices.Reverse(out)
	return strings.Join(out, ", ")
}

func (w *world) clone() *world {
	c := *w
	c.node = w.node.DeepCopy()
	return &c
}

func (w *world) pod() *corev1.Pod { return initPod(w.shown, w.shownReady) }

func (w *world) warm() bool { return w.warmedBoot == w.boot }

// key is the state: the Node's taints, annotations and boot ID, and every field of the
// world but its path, the long names shortened (short). Two worlds with one key behave
// alike from here on, and decode makes the world again from it: the walk keeps keys, not
// Nodes, for the states it has yet to expand.
func (w *world) key() string {
	var b strings.Builder
	for _, t := range w.node.Spec.Taints {
		b.WriteString(t.Key + ":" + string(t.Effect) + ";")
	}
	b.WriteByte('|')
	for _, k := range slices.Sorted(maps.Keys(w.node.Annotations)) {
		b.WriteString(k + "=" + w.node.Annotations[k] + ";")
	}
	b.WriteString("|" + w.node.Status.NodeInfo.BootID + "|")
	for _, p := range w.ints() {
		b.WriteString(strconv.Itoa(*p) + ",")
	}
	b.WriteByte('|')
	for _, f := range w.flags() {
		c := byte('0')
		if *f {
			c = '1'
		}
		b.WriteByte(c)
	}
	return short.Replace(b.String())
}

// ints and flags are the world's fields in the key's order.
func (w *world) ints() []*int {
	return []*int{&w.boot, &w.start, &w.startBoot, &w.warmedBoot, &w.shown, &w.seenShown}
}

func (w *world) flags() []*bool {
	return []*bool{&w.ready, &w.shownReady, &w.suspend, &w.ignore, &w.rekeyed, &w.renamed, &w.heldSuspended,
		&w.seenAny, &w.seenReady, &w.restartUnseen[0], &w.restartUnseen[1], &w.rebootedUnseen[0], &w.rebootedUnseen[1],
		&w.early[0], &w.early[1], &w.stranded[0], &w.stranded[1]}
}

// short and long shorten the names a key repeats, and lengthen them again: none of the
// model's names or values holds an '@'.
var (
	names = []string{
		"startup.k8s.io/completedAt." + rule.RecordName(Taint), "@u",
		"startup.k8s.io/completedAt." + rule.RecordName(RekeyedTaint), "@w",
		rule.DefaultPlacedAnnotation + "." + rule.RecordName(Taint), "@pu",
		rule.DefaultPlacedAnnotation + "." + rule.RecordName(RekeyedTaint), "@pw",
		Taint.Key, "@tu",
		RekeyedTaint.Key, "@tw",
		"startup.k8s.io/completedAt", "@c",
	}
	short = strings.NewReplacer(names...)
	long  = strings.NewReplacer(swapped(names)...)
)

func swapped(pairs []string) []string {
	out := make([]string, len(pairs))
	for i := 0; i < len(pairs); i += 2 {
		out[i], out[i+1] = pairs[i+1], pairs[i]
	}
	return out
}

// decode makes the world of a key (and no path).
func decode(key string) (*world, error) {
	parts := strings.Split(long.Replace(key), "|")
	if len(parts) != 5 {
		return nil, fmt.Errorf("key %q: %d parts", key, len(parts))
	}
	w := &world{node: startNode()}
	w.node.Spec.Taints, w.node.Annotations = nil, map[string]string{}
	for _, t := range strings.Split(parts[0], ";") {
		if k, effect, ok := strings.Cut(t, ":"); ok {
			w.node.Spec.Taints = append(w.node.Spec.Taints, corev1.Taint{Key: k, Effect: corev1.TaintEffect(effect)})
		}
	}
	for _, a := range strings.Split(parts[1], ";") {
		if k, v, ok := strings.Cut(a, "="); ok {
			w.node.Annotations[k] = v
		}
	}
	w.node.Status.NodeInfo.BootID = parts[2]
	ints := strings.Split(strings.TrimSuffix(parts[3], ","), ",")
	if len(ints) != len(w.ints()) || len(parts[4]) != len(w.flags()) {
		return nil, fmt.Errorf("key %q: %d numbers, %d flags", key, len(ints), len(parts[4]))
	}
	for i, p := range w.ints() {
		n, err := strconv.Atoi(ints[i])
		if err != nil {
			return nil, fmt.Errorf("key %q: %w", key, err)
		}
		*p = n
	}
	for i, f := range w.flags() {
		*f = parts[4][i] == '1'
	}
	return w, nil
}

// ownTaint reports whether the node carries a taint of the rule as it is now: of its key, or
// placed under its record.
func (w *world) ownTaint() bool {
	t := Taint
	if w.rekeyed {
		t = RekeyedTaint
	}
	_, placed := w.node.Annotations[rule.DefaultPlacedAnnotation+"."+rule.RecordName(t)]
	return placed && len(w.node.Spec.Taints) > 0 || slices.ContainsFunc(w.node.Spec.Taints, func(x corev1.Taint) bool { return x.Key == t.Key })
}

// done and rekeyedDone are the completion annotations of the two taints' records, as the
// config names them (rule.RecordName): a rename keeps the record.
var (
	done        = "startup.k8s.io/completedAt." + rule.RecordName(Taint)
	rekeyedDone = "startup.k8s.io/completedAt." + rule.RecordName(RekeyedTaint)
)

// records are the completion annotations of the two records, by index.
var records = [2]string{done, rekeyedDone}

// rec is the index of the record of the rule in force.
func (w *world) rec() int {
	if w.rekeyed {
		return 1
	}
	return 0
}

// events change the world; each reports whether it applies. The bounds (two reboots, five
// container starts) keep the state space finite.
var events = map[string]func(w *world) bool{
	"reboot": func(w *world) bool {
		if w.boot == 2 {
			return false
		}
		w.boot++
		w.node.Status.NodeInfo.BootID = fmt.Sprintf("b%d", w.boot)
		for i, rec := range records {
			w.rebootedUnseen[i] = w.rebootedUnseen[i] || w.node.Annotations[rec+"_regatedAt"] != ""
			w.early[i] = w.early[i] || w.restartUnseen[i]
		}
		return true
	},
	"kubelet-restarts-containers": func(w *world) bool {
		if w.startBoot == w.boot {
			return false
		}
		w.start, w.startBoot, w.ready = w.start+1, w.boot, false
		w.shown, w.shownReady = w.start, false
		return true
	},
	"warm-up": func(w *world) bool {
		if w.startBoot != w.boot || w.ready {
			return false
		}
		w.ready, w.shownReady, w.warmedBoot = true, true, w.boot
		for i, rec := range records {
			w.restartUnseen[i] = w.restartUnseen[i] || w.node.Annotations[rec] != ""
		}
		return true
	},
	"crash-restart": func(w *world) bool {
		if w.startBoot != w.boot || !w.ready || w.start > 4 {
			return false
		}
		w.start++
		w.shown, w.ready, w.shownReady = w.start, false, false
		return true
	},
	"suspend": func(w *world) bool {
		w.suspend = !w.suspend
		w.heldSuspended = w.suspend && w.ownTaint()
		return true
	},
	"onReboot": func(w *world) bool { w.ignore = !w.ignore; return true },
	// A rename keeps the record; a re-key leaves the old taint an orphan, which the gate
	// does not lift while the rule is suspended (config.Frozen): the hold stays either way.
	"rekey":  func(w *world) bool { w.rekeyed = !w.rekeyed; return true },
	"rename": func(w *world) bool { w.renamed = !w.renamed; return true },
}
