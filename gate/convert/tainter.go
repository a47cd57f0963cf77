package convert

import (
	"fmt"
	"net"
	"regexp"
	"strconv"
	"strings"

	"github.com/BurntSushi/toml"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/startupgate/startupgate/gate/rule"
)

// tainterConfig is tainter's settings file, as src/settings/mod.rs reads it.
type tainterConfig struct {
	Server     *tainterServer `toml:"server"`
	Log        *tainterLog    `toml:"log"`
	Reconciler struct {
		Matchers []tainterMatcher `toml:"matchers"`
	} `toml:"reconciler"`
}

type tainterServer struct {
	Host string `toml:"host"`
	// Port is a string in tainter's own examples ("8080"); its config loader takes a number too.
	Port any `toml:"port"`
}

type tainterLog struct {
	MaxLevel string `toml:"max_level"`
}

type tainterMatcher struct {
	Taint      tainterTaint       `toml:"taint"`
	Conditions []tainterCondition `toml:"conditions"`
}

type tainterTaint struct {
	Effect string `toml:"effect"`
	Key    string `toml:"key"`
	Value  string `toml:"value"`
}

type tainterCondition struct {
	Type   string `toml:"type"`
	Status string `toml:"status"`
}

// Tainter converts tainter's TOML settings. Each matcher becomes a condition rule with the
// same taint, tainter's behaviour kept: the taint is never removed (keepAfterClear), and a
// status matches anywhere in the value (the regex is wrapped to match the whole value). A
// key tainter does not know is an error, as is a condition type written as a regex: a gate
// rule matches one condition type by name.
func Tainter(data []byte) (*Output, error) {
	var cfg tainterConfig
	md, err := toml.Decode(string(data), &cfg)
	if err != nil {
		return nil, fmt.Errorf("decoding tainter config: %w", err)
	}
	if undecoded := md.Undecoded(); len(undecoded) > 0 {
		keys := make([]string, len(undecoded))
		for i, k := range undecoded {
			keys[i] = k.String()
		}
		return nil, fmt.Errorf("decoding tainter config: unknown keys %s: tainter has no such setting", strings.Join(keys, ", "))
	}
	if len(cfg.Reconciler.Matchers) == 0 {
		return nil, fmt.Errorf("reconciler.matchers: none: nothing to convert")
	}
	out := &Output{Header: []string{"Converted from a tainter config by `gate convert --from tainter`."}}
	header, err := tainterSettings(&cfg)
	if err != nil {
		return nil, err
	}
	out.Header = append(out.Header, header...)
	names := map[string]bool{}
	for i := range cfg.Reconciler.Matchers {
		r, err := tainterRule(cfg.Reconciler.Matchers, i, names)
		if err != nil {
			return nil, err
		}
		out.Rules = append(out.Rules, r)
	}
	return out, nil
}

// tainterSettings says what becomes of [server] and [log]: process settings, not rules.
func tainterSettings(cfg *tainterConfig) ([]string, error) {
	var out []string
	if s := cfg.Server; s != nil {
		port, err := tainterPort(s.Port)
		if err != nil {
			return nil, err
		}
		addr := net.JoinHostPort(s.Host, port)
		out = append(out, "",
			fmt.Sprintf("[server] %s served tainter's /health. The gate serves /healthz and /readyz", addr),
			"at --health-probe-bind-address (default :8081); for the same address:",
			"  --health-probe-bind-address="+addr)
	}
	if l := cfg.Log; l != nil {
		out = append(out, "",
			fmt.Sprintf("[log] max_level = %q: the gate's --log-level=%s; at info it logs state", l.MaxLevel, gateLogLevel(l.MaxLevel)),
			"changes (tainted, cleared, over budget), with an Event on the Node for each.")
	}
	return out, nil
}

// gateLogLevel is the gate's --log-level nearest a tainter max_level: the gate has error,
// info and debug.
func gateLogLevel(tainter string) string {
	switch strings.ToLower(tainter) {
	case "error", "warn", "warning", "off":
		return "error"
	case "debug", "trace":
		return "debug"
	}
	return "info"
}

func tainterPort(p any) (string, error) {
	switch v := p.(type) {
	case int64:
		return strconv.FormatInt(v, 10), nil
	case string:
		if _, err := strconv.ParseUint(v, 10, 16); err == nil {
			return v, nil
		}
	}
	return "", fmt.Errorf("server.port: %v: want a port number", p)
}

// tainterRule converts matcher i. names holds the rule names already taken.
func tainterRule(matchers []tainterMatcher, i int, names map[string]bool) (Rule, error) {
	m := matchers[i]
	at := fmt.Sprintf("reconciler.matchers[%d]", i)
	if m.Taint.Value == "" {
		return Rule{}, fmt.Errorf("%s.taint.value: empty: tainter requires a value (its config would not load)", at)
	}
	for j := range i {
		if matchers[j].Taint.Key == m.Taint.Key {
			return Rule{}, fmt.Errorf("%s.taint.key: %q: matchers[%d] adds the same taint; tainter adds it when either matches, and a gate rule owns its taint key alone", at, m.Taint.Key, j)
		}
	}
	if len(m.Conditions) == 0 {
		return Rule{}, fmt.Errorf("%s.conditions: none: tainter would taint every node that has any condition; a gate rule needs at least one condition to match", at)
	}
	r := rule.Rule{
		Name:           tainterName(m.Taint.Key, i, names),
		Mode:           rule.Condition,
		Taint:          corev1.Taint{Key: m.Taint.Key, Value: m.Taint.Value, Effect: corev1.TaintEffect(m.Taint.Effect)},
		KeepAfterClear: true,
	}
	for j, c := range m.Conditions {
		match, err := tainterMatch(c)
		if err != nil {
			return Rule{}, fmt.Errorf("%s.conditions[%d].%w", at, j, err)
		}
		r.Match = append(r.Match, match)
	}
	return Rule{Comments: tainterComments(&r, i), Rule: r}, nil
}

// tainterMatch converts one condition. The error starts with the field it is about.
func tainterMatch(c tainterCondition) (rule.Match, error) {
	switch {
	case c.Type == "":
		return rule.Match{}, fmt.Errorf("type: empty: tainter matches it against every condition type; a gate rule names one type")
	case regexp.QuoteMeta(c.Type) != c.Type:
		return rule.Match{}, fmt.Errorf("type: %q is a regular expression; a gate rule matches one condition type by its exact name", c.Type)
	}
	status, err := unanchored(c.Status)
	if err != nil {
		return rule.Match{}, fmt.Errorf("status: %w", err)
	}
	return rule.Match{Type: corev1.NodeConditionType(c.Type), Status: status}, nil
}

// tainterComments say where the rule keeps tainter's behaviour and where it differs.
func tainterComments(r *rule.Rule, i int) []string {
	types := make([]string, len(r.Match))
	for j, m := range r.Match {
		types[j] = string(m.Type)
	}
	out := []string{
		fmt.Sprintf("From reconciler.matchers[%d]. keepAfterClear: tainter never removes a taint it added;", i),
		"drop it to have the gate lift the taint when the conditions stop matching.",
		"tainter searches a status for its regex; the gate matches the whole status, so each",
		"status RE is written (?s:.*)(?:RE)(?s:.*), which matches exactly what RE found.",
		"Types are exact names: tainter also matched any condition type that contains",
		strings.Join(types, ", ") + ".",
	}
	if r.Taint.Effect == corev1.TaintEffectNoExecute {
		out = append(out,
			"NoExecute: tainter taints every matching node at once. The gate has an eviction budget:",
			fmt.Sprintf("at most maxTainted of the nodes this rule selects carry the taint at once, default %s", rule.DefaultMaxTainted.String()),
			"(rounded up). Set maxTainted (a count, or a percentage up to 100%) to change it.",
			"Like tainter, the gate sets the taint's timeAdded.")
	}
	return out
}

// tainterName derives a distinct DNS-1123 label from the taint key's name part: "pressure",
// "out-of-service"; tainter-<i> when nothing usable is left.
func tainterName(key string, i int, taken map[string]bool) string {
	_, name, found := strings.Cut(key, "/")
	if !found {
		name = key
	}
	name = sanitize(name)
	if name == "" {
		name = fmt.Sprintf("tainter-%d", i)
	}
	for n := 2; taken[name]; n++ {
		name = fmt.Sprintf("%s-%d", strings.TrimSuffix(name[:min(len(name), validation.DNS1123LabelMaxLength-4)], "-"), n)
	}
	taken[name] = true
	return name
}

// sanitize lowers s and replaces every run of characters a DNS-1123 label cannot hold with
// one '-', trimmed from the ends and to the label's length.
func sanitize(s string) string {
	var b strings.Builder
	for _, c := range strings.ToLower(s) {
		if ('a' <= c && c <= 'z') || ('0' <= c && c <= '9') {
			b.WriteRune(c)
		} else if !strings.HasSuffix(b.String(), "-") {
			b.WriteByte('-')
		}
	}
	out := strings.Trim(b.String(), "-")
	out = out[:min(len(out), validation.DNS1123LabelMaxLength)]
	return strings.TrimRight(out, "-")
}
