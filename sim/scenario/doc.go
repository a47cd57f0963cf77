// Package scenario owns what a scenario file says: its types, strict decoding (an unknown
// field is an error at its file:line), defaults and validation, and the pure construction
// of the Kubernetes objects a scenario asks for.
//
// It is the first step of the simulator's data path and knows nothing after it: it holds
// no client, starts nothing and judges nothing. Everything a scenario can do is a typed
// field here; there is no logic in YAML, no templates and no scripts.
package scenario
