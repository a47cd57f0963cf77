package record

import (
	"errors"
	"testing"
	"time"
)

// TestFirstReleased: the release lies in (held, released]; each binding inside is settled by
// what the node was at its resourceVersion. history maps a resourceVersion to the version
// the node had then and whether it was released.
func TestFirstReleased(t *testing.T) {
	// The node was written at 10 (held), 20 (released), 30 (a status report): a stream
	// that missed 20 saw held at 10 and released first at 30.
	history := func(rv uint64) (bool, uint64, error) {
		switch {
		case rv >= 30:
			return true, 30, nil
		case rv >= 20:
			return true, 20, nil
		default:
			return false, 10, nil
		}
	}
	tests := []struct {
		name           string
		held, released uint64
		bound          []uint64
		want           uint64
		reads          int
	}{
		{name: "nothing bound inside", held: 10, released: 30, bound: []uint64{5, 30, 31}, want: 30},
		{name: "bound after the missed release", held: 10, released: 30, bound: []uint64{25, 22}, want: 20, reads: 1},
		{name: "bound before it: still early", held: 10, released: 30, bound: []uint64{15}, want: 30, reads: 1},
		{name: "both sides", held: 10, released: 30, bound: []uint64{15, 25, 26}, want: 20, reads: 2},
		{name: "stream saw the release", held: 10, released: 20, bound: []uint64{15}, want: 20, reads: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reads := 0
			got, err := FirstReleased(tt.held, tt.released, tt.bound, func(rv uint64) (bool, uint64, error) {
				reads++
				return history(rv)
			})
			if err != nil || got != tt.want || reads != tt.reads {
				t.Errorf("FirstReleased = %d, %v after %d reads; want %d after %d", got, err, reads, tt.want, tt.reads)
			}
		})
	}
	boom := errors.New("compacted")
	if _, err := FirstReleased(10, 30, []uint64{25}, func(uint64) (bool, uint64, error) { return false, 0, boom }); !errors.Is(err, boom) {
		t.Errorf("a failed read: %v, want it returned", err)
	}
}

// TestReadyMomentLastWriteAfterRelease: the gate released on the watch before the fake
// kubelet's client returned from the write that made the last init Pod ready; the write
// before the release made an earlier Pod ready, 4 s before. The moment is when the recorder
// saw every init Pod Ready, not that earlier write.
func TestReadyMomentLastWriteAfterRelease(t *testing.T) {
	t0 := time.Unix(1000, 0)
	rec := NodeRecord{
		ReadyAccepted: []time.Time{t0.Add(2 * time.Second), t0.Add(6050 * time.Millisecond)},
		InitReady:     Mark{Time: t0.Add(6 * time.Second)},
		Released:      Mark{Time: t0.Add(6030 * time.Millisecond)},
	}
	if got := rec.ReadyMoment(); !got.Equal(t0.Add(6 * time.Second)) {
		t.Errorf("ReadyMoment() = %s after t0, want 6s", got.Sub(t0))
	}
	rec.ReadyAccepted = rec.ReadyAccepted[:1]
	rec.ReadyAccepted = append(rec.ReadyAccepted, t0.Add(6010*time.Millisecond))
	if got := rec.ReadyMoment(); !got.Equal(t0.Add(6010 * time.Millisecond)) {
		t.Errorf("ReadyMoment() = %s after t0, want the last write before the release, 6.01s", got.Sub(t0))
	}
}
