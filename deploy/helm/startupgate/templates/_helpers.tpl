{{/* The chart's name, "startupgate" unless nameOverride says otherwise. */}}
{{- define "startupgate.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/*
The prefix of every object's name. A release named "startupgate" (as the README installs it)
gives the same names as the kustomize base, so both installs can be compared and replaced
by each other.
*/}}
{{- define "startupgate.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := include "startupgate.name" . -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* Selects the gate's Pods: the base's name label plus Helm's instance label. */}}
{{- define "startupgate.selectorLabels" -}}
app.kubernetes.io/name: {{ include "startupgate.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{/* The base's labels plus Helm's standard ones. */}}
{{- define "startupgate.labels" -}}
{{ include "startupgate.selectorLabels" . }}
app.kubernetes.io/part-of: startupgate
app.kubernetes.io/version: {{ .Values.image.tag | default .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end -}}

{{/* The webhook Service's name; its DNS names are what the serving certificate covers. */}}
{{- define "startupgate.webhookService" -}}
{{ include "startupgate.fullname" . }}-webhook
{{- end -}}

{{- define "startupgate.certSecret" -}}
{{ include "startupgate.fullname" . }}-webhook-tls
{{- end -}}

{{- define "startupgate.webhookMode" -}}
{{- if eq .Values.mode "webhook" }}true{{ end -}}
{{- end -}}

{{/* "true" when a rule of config (or its top-level default rule) has timeoutPolicy replace:
the gate then needs the Karpenter grants of rbac.yaml. */}}
{{- define "startupgate.replaces" -}}
{{- $replace := eq (toString (dig "timeoutPolicy" "" .Values.config)) "replace" -}}
{{- range (dig "rules" list .Values.config) -}}
{{- if eq (toString (dig "timeoutPolicy" "" .)) "replace" -}}{{- $replace = true -}}{{- end -}}
{{- end -}}
{{- if $replace }}true{{ end -}}
{{- end -}}

{{/* Combinations the schema cannot express, refused with a clear message at install. */}}
{{- define "startupgate.validate" -}}
{{- if and .Values.podGuard.enabled (ne .Values.mode "webhook") -}}
{{- fail "podGuard.enabled needs mode webhook: the Pod guard is served by the gate's webhook server" -}}
{{- end -}}
{{- if and .Values.pdb.enabled (not (kindIs "string" .Values.pdb.minAvailable)) (ge (int .Values.pdb.minAvailable) (int .Values.replicas)) -}}
{{- fail "pdb.minAvailable must be below replicas: otherwise a drain can never evict a gate Pod" -}}
{{- end -}}
{{- if and (eq .Values.mode "policy") (semverCompare "<1.36.0-0" .Capabilities.KubeVersion.Version) -}}
{{- fail (printf "mode policy needs Kubernetes 1.36 or later (MutatingAdmissionPolicy v1); this cluster is %s: use mode webhook" .Capabilities.KubeVersion.Version) -}}
{{- end -}}
{{- if hasKey .Values.config "exclude" -}}
{{- fail "config.exclude: set exclude at the top of the values; the chart renders it into the config, the webhook's objectSelector, the policy and the Deployment's affinity" -}}
{{- end -}}
{{- if and (eq .Values.mode "policy") (not .Values.policyManifest) -}}
{{- range (list "rules" "nodeSelector" "instance") -}}
{{- if hasKey $.Values.config . -}}
{{- fail (printf "mode policy with config.%s: the chart renders the policy of the config's top-level taint only; pass `gate --print-policy --config F` as policyManifest (--set-file policyManifest=policy.yaml)" .) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/*
The requirements of a node the gate gates: each exclusion negated (In and NotIn swap, as do
Exists and DoesNotExist), as matchExpressions. Every rule's selector ends with them, and so
do the webhook's and the policy's objectSelector.
*/}}
{{- define "startupgate.gatedExpressions" -}}
{{- $negate := dict "In" "NotIn" "NotIn" "In" "Exists" "DoesNotExist" "DoesNotExist" "Exists" -}}
{{- range .Values.exclude }}
- key: {{ .key }}
  operator: {{ get $negate .operator }}
  {{- with .values }}
  values: {{ toJson . }}
  {{- end }}
{{- end -}}
{{- end -}}

{{/* The scrape job of the gate's metrics: alerts.job, else the metrics Service's name, the
job the chart's ServiceMonitor gives them. The alerts and the dashboard read only it. */}}
{{- define "startupgate.metricsJob" -}}
{{- default (printf "%s-metrics" (include "startupgate.fullname" .)) .Values.alerts.job -}}
{{- end -}}

{{/* The taints the gate places at a node's CREATE, from config: each startup or continuous
rule's, or the top-level default rule's. A condition rule's taint marks a node the gate's
Pods should leave (an out-of-service node), so it is not among them. One per line,
"key=value:Effect", each once. */}}
{{- define "startupgate.gateTaints" -}}
{{- $taints := list -}}
{{- $rules := dig "rules" list .Values.config -}}
{{- if $rules -}}
{{- range $rules -}}
{{- if and .taint (ne (toString (dig "mode" "" .)) "condition") -}}{{- $taints = append $taints .taint -}}{{- end -}}
{{- end -}}
{{- else -}}
{{- $taints = append $taints (dig "taint" (dict) .Values.config) -}}
{{- end -}}
{{- $seen := dict -}}
{{- range $taints -}}
{{- $line := printf "%s=%s:%s" (.key | default "startup.k8s.io/initializing") (.value | default "wait") (.effect | default "NoSchedule") -}}
{{- if not (hasKey $seen $line) }}{{ $_ := set $seen $line true }}
{{ $line }}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* The gate's Pods tolerate every taint it places (gateTaints), so that a gate whose
excluded nodes are full still runs, and CriticalAddonsOnly, which AKS recommends for system
pools and EKS and GKE guides use for theirs: without it the gate never lands on the pool
exclude names. */}}
{{- define "startupgate.tolerations" -}}
{{- $seen := dict -}}
{{- range (include "startupgate.gateTaints" . | trim | splitList "\n") }}
{{- $kv := splitList ":" . -}}
{{- $key := splitList "=" (first $kv) | first -}}
{{- $effect := last $kv -}}
{{- if not (hasKey $seen (printf "%s:%s" $key $effect)) }}{{ $_ := set $seen (printf "%s:%s" $key $effect) true }}
- key: {{ $key }}
  operator: Exists
  effect: {{ $effect }}
{{- end -}}
{{- end }}
- key: CriticalAddonsOnly
  operator: Exists
{{- end -}}

{{/* One requirement of exclude, as a node selector's match expression. */}}
{{- define "startupgate.nodeExpression" -}}
- key: {{ .key }}
  operator: {{ .operator }}
  {{- with .values }}
  values: {{ toJson . }}
  {{- end }}
{{- end -}}

{{/* The gate's config file, as the ConfigMap holds it: the values' config, versioned, with
exclude rendered in. */}}
{{- define "startupgate.configData" -}}
{{ toYaml (merge (deepCopy .Values.config) (dict "apiVersion" "config.startupgate.io/v1alpha1" "kind" "GateConfiguration" "exclude" .Values.exclude)) }}
{{- end -}}

{{/* The ConfigMap's name, by its content as kustomize's generator names it: an upgrade makes a
new one, so the Pods of the old ReplicaSet keep reading the config they started with, even
when they restart while the new config crash-loops the new ones. */}}
{{- define "startupgate.configMapName" -}}
{{ include "startupgate.fullname" . }}-config-{{ include "startupgate.configData" . | sha256sum | trunc 10 }}
{{- end -}}
