package rule

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	sigsjson "sigs.k8s.io/json"
)

// ConditionRequirement is a node condition a rule requires. It is written "Type=Status", or
// as {type, status, defaultStatus} when an absent condition is to count as a status: a
// problem condition from the node-problem-detector, such as MaintenanceRequired=False, is
// one that a healthy node may never report.
type ConditionRequirement struct {
	Type   corev1.NodeConditionType `json:"type"`
	Status corev1.ConditionStatus   `json:"status"`
	// DefaultStatus is the status an absent condition counts as. Empty: an absent condition
	// never holds, and the node stays held until it is reported.
	DefaultStatus corev1.ConditionStatus `json:"defaultStatus,omitempty"`
}

// ParseConditionRequirement reads "Type=Status" as it stands; Compile checks it.
func ParseConditionRequirement(s string) ConditionRequirement {
	t, st, ok := strings.Cut(s, "=")
	if !ok {
		return ConditionRequirement{Type: corev1.NodeConditionType(s)}
	}
	return ConditionRequirement{Type: corev1.NodeConditionType(t), Status: corev1.ConditionStatus(st)}
}

// String is the requirement's "Type=Status" form, without its default.
func (c ConditionRequirement) String() string {
	if c.Status == "" {
		return string(c.Type)
	}
	return string(c.Type) + "=" + string(c.Status)
}

// UnmarshalJSON reads either form, the object as strictly as the rest of the config.
func (c *ConditionRequirement) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		*c = ParseConditionRequirement(s)
		return nil
	}
	type plain ConditionRequirement // without this method
	var p plain
	strict, err := sigsjson.UnmarshalStrict(b, &p)
	if err = errors.Join(append([]error{err}, strict...)...); err != nil {
		return err
	}
	*c = ConditionRequirement(p)
	return nil
}

// MarshalJSON writes the short form unless there is a default, so that a config without
// defaults reads as it always has.
func (c ConditionRequirement) MarshalJSON() ([]byte, error) {
	if c.DefaultStatus == "" {
		return json.Marshal(c.String())
	}
	type plain ConditionRequirement
	return json.Marshal(plain(c))
}

// MarshalYAML is MarshalJSON's choice for YAML encoders that do not go through JSON.
func (c ConditionRequirement) MarshalYAML() (any, error) {
	if c.DefaultStatus == "" {
		return c.String(), nil
	}
	return struct {
		Type          string `yaml:"type"`
		Status        string `yaml:"status"`
		DefaultStatus string `yaml:"defaultStatus"`
	}{string(c.Type), string(c.Status), string(c.DefaultStatus)}, nil
}

// compile checks the requirement and gives its compiled form.
func (c ConditionRequirement) compile() (condition, error) {
	cond, err := parseCondition(c.String())
	if err != nil {
		return condition{}, err
	}
	switch c.DefaultStatus {
	case "", corev1.ConditionTrue, corev1.ConditionFalse, corev1.ConditionUnknown:
	default:
		return condition{}, fmt.Errorf("defaultStatus %q: must be True, False or Unknown", c.DefaultStatus)
	}
	cond.Default = c.DefaultStatus
	return cond, nil
}
