// Package convert turns another tool's configuration into the gate's rules: tainter's TOML
// settings file and node-readiness-controller's NodeReadinessRule objects. It backs `gate
// convert`.
//
// A conversion is exact or it fails. A setting with no equal in a gate rule is an error that
// names the setting, never a silent drop; a difference in behaviour the gate keeps on
// purpose (an eviction budget, a settle time) is said in a comment above the rule. The
// result is checked with config.LoadConfig and Validate before it is returned, so a
// conversion that `gate --config` would refuse fails here.
//
// The package is pure: bytes in, bytes out. It is imported by cmd/gate only; the TOML
// library stays out of the gate package that the webhook and the controller use.
package convert
