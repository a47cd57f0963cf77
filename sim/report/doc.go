// Package report writes what a run showed: a text table (with, for each failure, its
// violations and the command that reproduces it), a soak summary, JSON for machines,
// JUnit for CI, and a self-contained HTML page (curves over time under the fault windows,
// the release-latency CDF, the nodes that went wrong, a row per node). It also defines the
// progress a running scenario reports, and the charts the benchmark's page shares.
//
// It formats results and nothing else: it must not judge (a Result arrives judged by
// sim/check) and must not reach the cluster.
package report
