// Package report writes what a run showed: a text table (with, for each failure, its
// violations and the command that reproduces it), a soak summary, JSON for machines,
// JUnit for CI, and a self-contained HTML timeline.
//
// It formats results and nothing else: it must not judge (a Result arrives judged by
// sim/check) and must not reach the cluster.
package report
