// Package bench is the benchmark (`make bench`, `simulate bench`): it drives the runner of
// package sim on one embedded plane, through sim.Hooks, and measures the gate beside the
// plane's own floor — release latency, admission latency, Node writes per release (from
// the apiserver's audit log), the gate's heap and CPU, and what the Pod guard costs a burst
// of bindings — into bench.json, bench.md and bench.html.
//
// Every figure is reported next to its reference from the same run, because these
// machines are shared and noisy. It asserts no timing: targets are figures to report, and
// a figure that could not be measured must say so. It must not change how a scenario is
// judged; it reads the runner's results and the gate's own metrics.
package bench
