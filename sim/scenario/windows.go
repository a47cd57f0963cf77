package scenario

import (
	"fmt"
	"time"
)

// Window is a stretch of a run during which a fault acts, as the scenario plans it:
// offsets from the run's start. End equals Start for a fault that is one act (a
// DaemonSet deleted, Pods created), not a stretch.
//
// The window is the plan, not a measurement: a restarted apiserver takes a moment more than
// its Down to serve again, and a killed leader is replaced when its lease lapses. It is
// what the report shades, so that a picture explains its own tail.
type Window struct {
	Name       string
	Start, End time.Duration
}

// FaultWindows lists the scenario's faults in timeline order, and the time before a late
// gate is installed. Joins, re-registrations, node deletions and scaling are not faults and
// are not listed.
func (sc *Scenario) FaultWindows() []Window {
	var out []Window
	if sc.GateStartsAt > 0 {
		out = append(out, Window{Name: "no gate yet", End: sc.GateStartsAt})
	}
	for i := range sc.Timeline {
		s := &sc.Timeline[i]
		if name, d, ok := fault(s); ok {
			out = append(out, Window{Name: name, Start: s.At, End: s.At + d})
		}
	}
	return out
}

// fault names a step's fault and how long it acts; ok is false for a step that is no fault.
func fault(s *Step) (name string, d time.Duration, ok bool) {
	switch {
	case s.WebhookOutage != nil:
		mode := s.WebhookOutage.Mode
		if mode == "" {
			mode = "refuse"
		}
		return fmt.Sprintf("webhook outage (%s)", mode), s.WebhookOutage.Duration, true
	case s.WebhookLatency != nil:
		return fmt.Sprintf("webhook +%s", s.WebhookLatency.Latency), s.WebhookLatency.Duration, true
	case s.GateCrash != nil:
		return "gate killed", s.GateCrash.RestartAfter, true
	case s.LeaderFailover != nil:
		return "leader killed", s.LeaderFailover.RestartAfter, true
	case s.TaintWriters != nil:
		return fmt.Sprintf("%d taint writers", s.TaintWriters.Writers), s.TaintWriters.Duration, true
	case s.APIServerRestart != nil:
		return "apiserver down", s.APIServerRestart.Down, true
	case s.WatchDrops != nil:
		return fmt.Sprintf("watch drops every %s", s.WatchDrops.Every), s.WatchDrops.Duration, true
	case s.DeleteInitDaemonSet != nil:
		return fmt.Sprintf("DaemonSet %s deleted", s.DeleteInitDaemonSet.Name), 0, true
	case s.BypassPods != nil:
		return fmt.Sprintf("%d bypass Pods", s.BypassPods.Count), 0, true
	case s.InitPod != nil:
		return fmt.Sprintf("%s Pods %s", s.InitPod.Name, s.InitPod.State), s.InitPod.Duration, true
	case s.NodeCondition != nil && s.NodeCondition.Clear:
		return fmt.Sprintf("condition %s cleared", s.NodeCondition.Type), 0, true
	case s.NodeCondition != nil:
		return fmt.Sprintf("condition %s=%s", s.NodeCondition.Type, s.NodeCondition.Status), 0, true
	case s.KubeletStop != nil:
		return "kubelet stopped", 0, true
	case s.Reboot != nil:
		return "nodes rebooted", 0, true
	case s.SuspendRule != nil:
		return fmt.Sprintf("rule %s suspended", s.SuspendRule.Rule), s.SuspendRule.For, true
	case s.CrashAtWrite != nil:
		when := "before"
		if s.CrashAtWrite.After {
			when = "after"
		}
		return fmt.Sprintf("gate killed %s write %d", when, s.CrashAtWrite.Write), s.CrashAtWrite.RestartAfter, true
	case s.WatchDelay != nil:
		return fmt.Sprintf("%s watch %s late", s.WatchDelay.Resource, s.WatchDelay.Delay), s.WatchDelay.For, true
	case s.EditRule != nil:
		return fmt.Sprintf("rule %s edited", s.EditRule.Rule), s.EditRule.For, true
	case s.PauseAutoscaler != nil:
		// The window starts with the next Node the autoscaler creates, after At.
		return "autoscaler paused", s.PauseAutoscaler.For, true
	}
	return "", 0, false
}
