package config

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/startupgate/startupgate/gate/rule"
)

// TestLoadListsOverDefaults: a list the file gives replaces the default list whole; an
// element's field the file leaves out is not taken from the default's element; a list the
// file does not name keeps its default, and an empty one is empty.
func TestLoadListsOverDefaults(t *testing.T) {
	for _, tc := range []struct {
		file       string
		components []rule.Component
		exclude    []metav1.LabelSelectorRequirement
	}{
		{"components: [{selector: app=x}]\n", []rule.Component{{Selector: "app=x"}}, DefaultExclude()},
		{"exclude: [{key: pool, operator: Exists}]\n", DefaultConfig().Components, []metav1.LabelSelectorRequirement{{Key: "pool", Operator: metav1.LabelSelectorOpExists}}},
		{"exclude: []\n", DefaultConfig().Components, []metav1.LabelSelectorRequirement{}},
		{"minHold: 1s\n", DefaultConfig().Components, DefaultExclude()},
	} {
		cfg, err := LoadConfig([]byte(tc.file))
		if err != nil {
			t.Fatalf("%q: %v", tc.file, err)
		}
		if diff := cmp.Diff(tc.components, cfg.Components); diff != "" {
			t.Errorf("%q: components (-want +got):\n%s", tc.file, diff)
		}
		if diff := cmp.Diff(tc.exclude, cfg.Exclude); diff != "" {
			t.Errorf("%q: exclude (-want +got):\n%s", tc.file, diff)
		}
	}
}
