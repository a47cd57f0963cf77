package policy

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/startupgate/startupgate/gate/config"
	"github.com/startupgate/startupgate/gate/rule"
)

// TestSuspendedRuleOverwritesItsPolicy: the policy objects are applied as rendered, and
// `kubectl apply` without pruning keeps an object the new rendering leaves out. A suspended
// rule must therefore still render its policy, under the same name, as one that never
// mutates; else the policy of the rule before it was suspended goes on tainting new nodes,
// which the suspended rule then never releases.
func TestSuspendedRuleOverwritesItsPolicy(t *testing.T) {
	cfg := config.DefaultConfig()
	cfg.Rules = []rule.Rule{{Name: "gpu", Suspend: true, NodeSelector: "pool=gpu",
		Taint:      corev1.Taint{Key: "example.com/gpu", Effect: corev1.TaintEffectNoSchedule},
		Components: []rule.Component{{Name: "driver", Selector: config.DefaultInitLabel}}}}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	objs, err := For(&cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(objs) != 1 || objs[0].Policy.Name != Name+"-gpu" {
		t.Fatalf("For() rendered %d objects; want the suspended rule's policy %s-gpu, which an apply must overwrite", len(objs), Name)
	}
	never := false
	for _, mc := range objs[0].Policy.Spec.MatchConditions {
		never = never || mc.Expression == "false"
	}
	if !never {
		t.Errorf("the suspended rule's policy has match conditions %+v; want one that is always false, so that it never mutates", objs[0].Policy.Spec.MatchConditions)
	}
}
