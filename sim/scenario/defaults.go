package scenario

import (
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"
)

// defaultInit gives a scenario without init DaemonSets the contract's one, and each init
// DaemonSet its labels, toleration and timeline defaults.
func (sc *Scenario) defaultInit() error {
	if len(sc.Init) == 0 {
		sc.Init = []InitDaemonSet{{Name: "init", Ready: PodTimeline{After: time.Second}}}
	}
	for i := range sc.Init {
		in := &sc.Init[i]
		if in.Name == "" {
			return at(sc.line("init", i), "init[%d]: name is required", i)
		}
		if len(in.Labels) == 0 {
			value := in.Name
			if i == 0 {
				value = "init"
			}
			in.Labels = map[string]string{"startup.k8s.io/component": value}
		}
		if in.Tolerate == nil {
			in.Tolerate = ptr.To(true)
		}
		switch in.Ready.Mode {
		case "":
			in.Ready.Mode = ModeReady
		case ModeReady, ModeNever, ModeCrashLoop, ModeAnnotate, ModeFlap:
		default:
			return at(sc.line("init", i, "ready", "mode"), "init[%d].ready.mode %q: want ready, never, crashloop, annotate or flap", i, in.Ready.Mode)
		}
		if in.Ready.Jitter > in.Ready.After {
			return at(sc.line("init", i, "ready", "jitter"), "init[%d].ready.jitter %s must not exceed after %s", i, in.Ready.Jitter, in.Ready.After)
		}
		if in.NeverOnFirst < 0 {
			return at(sc.line("init", i, "neverOnFirst"), "init[%d].neverOnFirst %d must not be negative", i, in.NeverOnFirst)
		}
	}
	return nil
}

func (sc *Scenario) defaultWorkloads() error {
	for i := range sc.Workloads {
		w := &sc.Workloads[i]
		if w.Name == "" || w.Replicas < 0 {
			return at(sc.line("workloads", i), "workloads[%d]: name and a non-negative replicas are required", i)
		}
		switch w.Kind {
		case "":
			w.Kind = KindDeployment
		case KindDeployment, KindStatefulSet:
		default:
			return at(sc.line("workloads", i, "kind"), "workloads[%d].kind %q: want Deployment or StatefulSet", i, w.Kind)
		}
		if w.CPU == "" {
			w.CPU = "100m"
		}
		// PodSpec builds the request with resource.MustParse: a value it cannot read must
		// stop here, with its line, not panic in the runner.
		if q, err := resource.ParseQuantity(w.CPU); err != nil || q.Sign() < 0 {
			return at(sc.line("workloads", i, "cpu"), "workloads[%d].cpu %q: want a non-negative quantity such as 100m", i, w.CPU)
		}
	}
	return nil
}
