package check

import (
	"time"

	"github.com/startupgate/startupgate/sim/record"
)

// marksEvery returns the tests' clock: the mark of resource version rv is rv units after t0,
// so that the order of versions and of times agree, as on one apiserver.
func marksEvery(t0 time.Time, unit time.Duration) func(rv uint64) record.Mark {
	return func(rv uint64) record.Mark {
		return record.Mark{RV: rv, Time: t0.Add(time.Duration(rv) * unit)}
	}
}
