{{/*
The chart's name, or nameOverride.
*/}}
{{- define "mrtr-operator.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
The prefix of every object's name: the release name, followed by the chart's name unless the release
name contains it already (release mrtr-operator: mrtr-operator, as kustomize's namePrefix).
*/}}
{{- define "mrtr-operator.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := include "mrtr-operator.name" . }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{/*
The labels of every object.
*/}}
{{- define "mrtr-operator.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
app.kubernetes.io/name: {{ include "mrtr-operator.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{/*
The labels that select the manager's pods (the Deployment's selector: never change them, it is
immutable). control-plane is the label kustomize's manifests select them by.
*/}}
{{- define "mrtr-operator.selectorLabels" -}}
app.kubernetes.io/name: {{ include "mrtr-operator.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
control-plane: controller-manager
{{- end }}

{{/*
The labels of the manager's pods and of the objects about them (Deployment, Service, ...).
*/}}
{{- define "mrtr-operator.managerLabels" -}}
{{ include "mrtr-operator.labels" . }}
control-plane: controller-manager
{{- end }}

{{/*
The name of the manager's ServiceAccount.
*/}}
{{- define "mrtr-operator.serviceAccountName" -}}
{{- if .Values.serviceAccount.name }}
{{- .Values.serviceAccount.name }}
{{- else if .Values.serviceAccount.create }}
{{- printf "%s-controller-manager" (include "mrtr-operator.fullname" .) }}
{{- else }}
{{- fail "serviceAccount.name must name the ServiceAccount to use when serviceAccount.create is false" }}
{{- end }}
{{- end }}

{{/*
The subject of the manager's bindings: its ServiceAccount.
*/}}
{{- define "mrtr-operator.serviceAccountSubject" -}}
- kind: ServiceAccount
  name: {{ include "mrtr-operator.serviceAccountName" . }}
  namespace: {{ .Release.Namespace }}
{{- end }}

{{/*
The namespaces the manager watches, as a JSON list (fromJsonArray reads it): scope.watchNamespaces
with ".Release.Namespace" resolved, each checked and listed once. Empty: every namespace.
*/}}
{{- define "mrtr-operator.watchNamespaces" -}}
{{- $namespaces := list }}
{{- range .Values.scope.watchNamespaces }}
{{- $ns := eq . ".Release.Namespace" | ternary $.Release.Namespace . }}
{{- if not (regexMatch "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$" $ns) }}
{{- fail (printf "scope.watchNamespaces: %q is not a namespace name (lowercase letters, digits and '-', at most 63) nor \".Release.Namespace\"" $ns) }}
{{- end }}
{{- if gt (len $ns) 63 }}
{{- fail (printf "scope.watchNamespaces: %q is longer than the 63 characters of a namespace name" $ns) }}
{{- end }}
{{- $namespaces = append $namespaces $ns }}
{{- end }}
{{- $namespaces | uniq | toJson }}
{{- end }}

{{/*
The objects of a file that the chart embeds, as a JSON list (fromJsonArray reads it); called with
(dict "root" $ "path" "files/..."). The files under files/ are copies of config/ that `make manifests`
refreshes, so that the chart and kustomize ship the same CRDs, manager rules, consumer role and
policy, and alerts: edit config/, never these copies.
*/}}
{{- define "mrtr-operator.fileObjects" -}}
{{- $content := .root.Files.Get .path }}
{{- if not $content }}
{{- fail (printf "%s is missing or empty: run `make manifests`, which copies it from config/" .path) }}
{{- end }}
{{- $objects := list }}
{{- range regexSplit "(?m)^---[ \t]*$" $content -1 }}
{{- $object := fromYaml . }}
{{- if hasKey $object "Error" }}
{{- fail (printf "%s: %s" $.path $object.Error) }}
{{- end }}
{{- if $object }}
{{- $objects = append $objects $object }}
{{- end }}
{{- end }}
{{- $objects | toJson }}
{{- end }}

{{/*
The one object of an embedded file, checked to be the kind and name the chart expects; called with
(dict "root" $ "path" "files/..." "kind" "..." "name" "...").
*/}}
{{- define "mrtr-operator.fileObject" -}}
{{- $objects := include "mrtr-operator.fileObjects" . | fromJsonArray }}
{{- $kinds := list }}
{{- range $objects }}
{{- if and (eq .kind $.kind) (eq .metadata.name $.name) }}
{{- toJson . }}
{{- end }}
{{- $kinds = append $kinds (printf "%s %s" .kind .metadata.name) }}
{{- end }}
{{- if not (has (printf "%s %s" .kind .name) $kinds) }}
{{- fail (printf "%s holds %s, not %s %s" .path (join ", " $kinds) .kind .name) }}
{{- end }}
{{- end }}

{{/*
What this install is (mode): "operator", the manager with its CRDs and rules; or "member", only
what a hub's manager needs on a member cluster of a ClusterMRTRKeyring (templates/member). Every
operator-only template is wrapped in a check of it; the admission policies and the consumer role
are installed in both.
*/}}
{{- define "mrtr-operator.mode" -}}
{{- $mode := .Values.mode | default "operator" }}
{{- if not (has $mode (list "operator" "member")) }}
{{- fail (printf "mode must be operator or member, not %q" $mode) }}
{{- end }}
{{- $mode }}
{{- end }}
