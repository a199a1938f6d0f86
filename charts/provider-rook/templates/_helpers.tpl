{{/* The labels every object of the release carries. */}}
{{- define "provider-rook.labels" -}}
app.kubernetes.io/name: provider-rook
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end }}

{{- define "provider-rook.selector" -}}
app.kubernetes.io/name: provider-rook
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "provider-rook.serviceAccount" -}}
{{ .Values.serviceAccount.name }}
{{- end }}
