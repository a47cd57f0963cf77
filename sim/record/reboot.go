package record

// Reboot is one reboot of a node, as the API showed it.
type Reboot struct {
	// BootID is the new boot ID; Seen is the first version of the Node that reported it.
	BootID string
	Seen   Mark
	// Regated is the first version after Seen that carried a gating rule's taint (zero:
	// the taint never came back).
	Regated Mark
	// Reinit is when every init component of the node was Ready again on the new boot: a
	// Pod of each Ready after Seen, with its containers restarted since (zero: not yet).
	Reinit Mark
}

// InitState is an init Pod's readiness and its containers' highest restart count, as of a
// write.
type InitState struct {
	Mark     Mark
	Ready    bool
	Restarts int32
}

// ReadyAgain is the first state of one init Pod, after seen, that shows it Ready on the new
// boot: Ready, and either seen unready after seen, or with more restarts than its last
// state at or before seen (an informer's re-list can coalesce the unready write away, never
// the restart count). A Pod first seen after seen is a new Pod: Ready is enough. Zero: none.
func ReadyAgain(states []InitState, seen Mark) Mark {
	base, down := int32(-1), false
	for _, st := range states {
		switch {
		case st.Mark.RV <= seen.RV:
			base = st.Restarts
		case !st.Ready:
			down = true
		case down || st.Restarts > base:
			return st.Mark
		}
	}
	return Mark{}
}
