package step

import "github.com/startupgate/startupgate/sim/scenario"

// Sequenced gives, for each step, the earlier steps it must wait for. Node condition steps
// take effect in timeline order. Run each at its offset alone and two at the same offset
// race, and under a slow apiserver an earlier one still writing can finish after a later
// one: a clear can land before the condition it clears, and the node ends with the
// condition the timeline had removed. Steps that wait (AfterBound, AfterReleased) keep
// their order too, in one chain: on a slow machine two of them are held past their offsets
// and released by the same binding or release, and a reboot would then race the Pods meant
// to arrive after it. Other steps keep to their
// offsets only: a join retries against a closed webhook and a fault lasts its window, so
// chaining them would stall the steps behind them.
func Sequenced(steps []scenario.Step) [][]int {
	after := make([][]int, len(steps))
	lastCond, lastWait := -1, -1
	for i := range steps {
		_, cond := steps[i].Action().(*scenario.NodeCondition)
		if cond && lastCond >= 0 {
			after[i] = append(after[i], lastCond)
		}
		waits := steps[i].AfterBound || steps[i].AfterReleased || steps[i].AfterRegated
		if waits && lastWait >= 0 && (!cond || lastWait != lastCond) {
			after[i] = append(after[i], lastWait)
		}
		if cond {
			lastCond = i
		}
		if waits {
			lastWait = i
		}
	}
	return after
}
