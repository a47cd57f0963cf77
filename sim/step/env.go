package step

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/startupgate/startupgate/gate/config"
	"github.com/startupgate/startupgate/sim/faults"
	"github.com/startupgate/startupgate/sim/record"
	"github.com/startupgate/startupgate/sim/scenario"
)

// Env is a run as its steps see it: a few small interfaces, of which each step reaches
// only those it needs. sim's run implements it.
type Env interface {
	Cluster
	Log
	// State is what the run's steps remember.
	State() *State
	Kubelet() Kubelet
	Gate() Gate
	Recorder() Recorder
	// Autoscaler is the run's autoscaler, or nil when it has none that a step can pause.
	Autoscaler() Autoscaler
	// Faults is what the run's faults may touch.
	Faults() *faults.Env
}

// Cluster is the API and the scenario's place in it.
type Cluster interface {
	// Client is the simulator's admin client.
	Client() kubernetes.Interface
	// Namespace holds the run's Pods and DaemonSets.
	Namespace() string
	Scenario() *scenario.Scenario
}

// Log is the run's report of what happened, and of what went wrong.
type Log interface {
	// Start is when the run's clock started.
	Start() time.Time
	// Note adds a line to the run's report.
	Note(format string, args ...any)
	// Fail makes the run fail (nil is ignored).
	Fail(err error)
}

// Kubelet is the fake kubelet of the run's nodes (sim/kubelet).
type Kubelet interface {
	Register(ctx context.Context, name string, labels map[string]string, taints []corev1.Taint, readyAfter time.Duration) error
	Deregister(name string)
	SetInitReady(initName string, nodes []string, ready bool) (int, error)
	Reboot(nodes []string) (int, error)
}

// Gate is the gate under test (sim/gateundertest), as the steps that change its config or
// perturb it see it.
type Gate interface {
	Reconfigure(ctx context.Context, change func(*config.Config)) (int64, error)
	Config() config.Config
	CrashAtWrite(k int, after bool, restartAfter time.Duration, match string) error
	DelayWatches(resource string, delay, window time.Duration) error
}

// Recorder is the run's recorder (sim/record/watch), told what the steps did that the API
// does not show.
type Recorder interface {
	SetConfig(cfg *config.Config)
	RuleSuspended(s record.Suspension)
	KubeletStopped(node string, at time.Time)
}

// Autoscaler is the run's autoscaler, stopped and continued by a pauseAutoscaler step.
type Autoscaler interface {
	// Arm makes the autoscaler stop inside its next Node CREATE; the channel receives that
	// Node's name, or closes without one if it could not be stopped.
	Arm() <-chan string
	Resume() error
}
