package record

import (
	"slices"
)

// FirstReleased narrows a release known to lie in (held, released] until no binding in
// bound falls inside it: it asks at(rv) whether the node was released at each one, in
// order, and returns the resourceVersion the release is at or before.
func FirstReleased(held, released uint64, bound []uint64, at func(rv uint64) (bool, uint64, error)) (uint64, error) {
	bound = slices.Sorted(slices.Values(bound))
	for _, b := range bound {
		if b <= held || b >= released {
			continue
		}
		ok, version, err := at(b)
		if err != nil {
			return released, err
		}
		if !ok {
			held = b
			continue
		}
		released = version
	}
	return released, nil
}
