package check

// ConfirmedEarly counts the early Pods that stay early whatever is still in flight: bound at
// or before nodeRV, the newest Node change the recorder has seen. Under a burst the Pod
// stream can run ahead of the Node stream, and a binding that follows a release not yet
// delivered would otherwise show as early in a live count (the final judgment waits for
// both streams to catch up, and so never sees this).
func ConfirmedEarly(vs []Violation, nodeRV uint64) int {
	n := 0
	for _, v := range vs {
		if v.Kind == KindEarlyPod && v.RV <= nodeRV {
			n++
		}
	}
	return n
}
