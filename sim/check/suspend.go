package check

import (
	"fmt"

	"github.com/startupgate/startupgate/sim/record"
)

// Violation kinds of a suspension.
const (
	// KindWroteWhileSuspended: the gate wrote a Node while a rule was suspended. A suspended
	// rule writes nothing; a scenario that suspends its only gating rule expects no write.
	KindWroteWhileSuspended = "wrote-while-suspended"
)

// Suspended judges the stretches in which a rule was suspended: the gate may write no Node.
func Suspended(ss []record.Suspension, ms func(record.Mark) int64) []Violation {
	var out []Violation
	for _, s := range ss {
		if s.Writes > 0 {
			out = append(out, Violation{Kind: KindWroteWhileSuspended, AtMS: ms(s.From),
				Detail: fmt.Sprintf("%d Node write(s) while rule %s was suspended (%d ms)", s.Writes, s.Rule, s.To.Time.Sub(s.From.Time).Milliseconds())})
		}
	}
	return out
}
