package check

import (
	"testing"
	"time"

	"github.com/startupgate/startupgate/sim/record"
)

func TestSuspended(t *testing.T) {
	t0 := time.Unix(1000, 0)
	ms := func(m record.Mark) int64 { return m.Time.Sub(t0).Milliseconds() }
	span := record.Suspension{Rule: "default", From: record.Mark{Time: t0.Add(time.Second)}, To: record.Mark{Time: t0.Add(3 * time.Second)}}
	quiet, wrote := span, span
	wrote.Writes = 2
	if v := Suspended([]record.Suspension{quiet}, ms); len(v) != 0 {
		t.Errorf("no writes while suspended: violations %v, want none", v)
	}
	v := Suspended([]record.Suspension{quiet, wrote}, ms)
	if len(v) != 1 || v[0].Kind != KindWroteWhileSuspended || v[0].AtMS != 1000 {
		t.Errorf("two writes while suspended: violations %+v, want one %s at 1000 ms", v, KindWroteWhileSuspended)
	}
}
