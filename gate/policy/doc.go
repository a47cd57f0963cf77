// Package policy renders the gate's admission-time mutation as Kubernetes objects that act
// inside the apiserver: the MutatingAdmissionPolicy and its binding (GA admissionregistration
// v1 in Kubernetes 1.36), and the objectSelector that scopes the webhook to gated nodes.
//
// It is a pure function of one config.Config, so that the webhook and the policy cannot drift
// apart: a test on the real apiserver holds the two equal, and a golden file pins the
// rendered YAML. It must not reach the cluster.
package policy
