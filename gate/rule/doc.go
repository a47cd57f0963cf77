// Package rule is one readiness rule of the gate, pure: a taint, the nodes it applies to,
// and what must hold before it comes off. It knows nothing of clients, caches or
// controllers; the gate package runs rules, this package only defines and decides them.
//
// A rule is in one of three modes. A startup rule holds a node from its creation until its
// requirements hold once, then releases it for good (its completion annotation records
// that). A continuous rule is released the same way, and afterwards puts its NoSchedule
// taint back whenever its requirements stop holding for longer than its settle time, and
// takes it off again when they hold. A condition rule (tainter's model) is never added at
// creation: its taint is on the node exactly while its node conditions match. Any rule can
// be dry-run: it decides like any other and writes nothing, which is how an operator rolls
// out a new rule.
//
// Requirements are components (the init DaemonSet Pods that must be Ready on the node) and
// node conditions (Type=Status, all must hold). Decide is the whole decision, table-tested.
package rule
