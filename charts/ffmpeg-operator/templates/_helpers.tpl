{{/* Chart name, cut to 63 characters (a DNS label). */}}
{{- define "ffmpeg-operator.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Prefix of the release's objects: the release name, plus the chart name unless the release name contains it. */}}
{{- define "ffmpeg-operator.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "ffmpeg-operator.apiName" -}}
{{- printf "%s-api" (include "ffmpeg-operator.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "ffmpeg-operator.operatorName" -}}
{{- printf "%s-operator" (include "ffmpeg-operator.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Labels of every object; pass (dict "ctx" $ "component" "api"). */}}
{{- define "ffmpeg-operator.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .ctx.Chart.Name .ctx.Chart.Version | replace "+" "_" }}
{{ include "ffmpeg-operator.selectorLabels" . }}
app.kubernetes.io/version: {{ .ctx.Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .ctx.Release.Service }}
{{- end }}

{{- define "ffmpeg-operator.selectorLabels" -}}
app.kubernetes.io/name: {{ include "ffmpeg-operator.name" .ctx }}
app.kubernetes.io/instance: {{ .ctx.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end }}

{{/* The service image (API and operator). */}}
{{- define "ffmpeg-operator.image" -}}
{{- printf "%s:%s" .Values.image.repository (.Values.image.tag | default .Chart.AppVersion) }}
{{- end }}

{{- define "ffmpeg-operator.runnerImage" -}}
{{- printf "%s:%s" .Values.runner.image.repository (.Values.runner.image.tag | default .Chart.AppVersion) }}
{{- end }}

{{/* In-cluster base URL of the API Service. */}}
{{- define "ffmpeg-operator.apiServiceUrl" -}}
{{- printf "http://%s.%s.svc:%v" (include "ffmpeg-operator.apiName" .) .Release.Namespace .Values.api.service.port }}
{{- end }}

{{/* What clients reach the API at: publicUrl, else the first Ingress host, else the Service's in-cluster URL. */}}
{{- define "ffmpeg-operator.publicUrl" -}}
{{- if .Values.publicUrl }}
{{- .Values.publicUrl | trimSuffix "/" }}
{{- else if and .Values.api.ingress.enabled .Values.api.ingress.hosts }}
{{- $host := (first .Values.api.ingress.hosts).host }}
{{- printf "%s://%s" (ternary "https" "http" (gt (len .Values.api.ingress.tls) 0)) $host }}
{{- else }}
{{- include "ffmpeg-operator.apiServiceUrl" . }}
{{- end }}
{{- end }}

{{- define "ffmpeg-operator.reportUrl" -}}
{{- .Values.runner.reportUrl | default (printf "%s/internal/v1/job-events" (include "ffmpeg-operator.apiServiceUrl" .)) }}
{{- end }}

{{/* Secret names: the existing Secret when given, else the one this chart makes. */}}
{{- define "ffmpeg-operator.databaseSecret" -}}
{{- .Values.database.existingSecret | default (printf "%s-database" (include "ffmpeg-operator.fullname" .)) }}
{{- end }}
{{- define "ffmpeg-operator.s3Secret" -}}
{{- .Values.s3.existingSecret | default (printf "%s-s3" (include "ffmpeg-operator.fullname" .)) }}
{{- end }}
{{- define "ffmpeg-operator.keysSecret" -}}
{{- printf "%s-keys" (include "ffmpeg-operator.fullname" .) }}
{{- end }}

{{/*
Environment shared by the API and the operator (core/config.ts, core/cluster-config.ts). Secrets come
by reference; extraEnv comes last, so an entry there overrides one here.
*/}}
{{- define "ffmpeg-operator.env" -}}
- name: FFOP_NAMESPACE
  value: {{ .Release.Namespace | quote }}
- name: FFOP_PUBLIC_URL
  value: {{ include "ffmpeg-operator.publicUrl" . | quote }}
- name: FFOP_REPORT_URL
  value: {{ include "ffmpeg-operator.reportUrl" . | quote }}
- name: FFOP_LOG_LEVEL
  value: {{ .Values.logLevel | quote }}
# Writable places on a read-only root filesystem: both are emptyDirs.
- name: FFOP_DATA_DIR
  value: /data
- name: TMPDIR
  value: /tmp
- name: FFOP_DATABASE_URL
  valueFrom:
    secretKeyRef:
      name: {{ include "ffmpeg-operator.databaseSecret" . }}
      key: {{ .Values.database.existingSecretKey }}
- name: FFOP_STORAGE
  value: s3
- name: FFOP_S3_ENDPOINT
  value: {{ .Values.s3.endpoint | quote }}
- name: FFOP_S3_REGION
  value: {{ .Values.s3.region | quote }}
- name: FFOP_S3_BUCKET
  value: {{ .Values.s3.bucket | quote }}
- name: FFOP_S3_ACCESS_KEY
  valueFrom:
    secretKeyRef:
      name: {{ include "ffmpeg-operator.s3Secret" . }}
      key: {{ .Values.s3.accessKeyKey }}
- name: FFOP_S3_SECRET_KEY
  valueFrom:
    secretKeyRef:
      name: {{ include "ffmpeg-operator.s3Secret" . }}
      key: {{ .Values.s3.secretKeyKey }}
- name: FFOP_JOB_TOKEN_SECRET
  valueFrom:
    secretKeyRef:
      name: {{ .Values.jobToken.existingSecret | default (include "ffmpeg-operator.keysSecret" .) }}
      key: {{ .Values.jobToken.existingSecretKey }}
- name: FFOP_SIGNING_KEY
  valueFrom:
    secretKeyRef:
      name: {{ .Values.signingKey.existingSecret | default (include "ffmpeg-operator.keysSecret" .) }}
      key: {{ .Values.signingKey.existingSecretKey }}
{{- with .Values.limits }}
- name: FFOP_DOWNLOAD_MAX_BYTES
  value: {{ .downloadMaxBytes | int64 | quote }}
- name: FFOP_DOWNLOAD_TIMEOUT_SECONDS
  value: {{ .downloadTimeoutSeconds | int64 | quote }}
- name: FFOP_UPLOAD_ALLOWANCE_SECONDS
  value: {{ .uploadAllowanceSeconds | int64 | quote }}
- name: FFOP_MAX_OUTPUT_FILE_BYTES
  value: {{ .maxOutputFileBytes | int64 | quote }}
- name: FFOP_MAX_OUTPUT_FILES
  value: {{ .maxOutputFiles | int64 | quote }}
- name: FFOP_MAX_MEMORY_BYTES
  value: {{ .maxMemoryBytes | int64 | quote }}
- name: FFOP_MAX_BODY_BYTES
  value: {{ .maxBodyBytes | int64 | quote }}
- name: FFOP_MAX_EVENT_STREAMS_PER_KEY
  value: {{ .maxEventStreamsPerKey | int64 | quote }}
- name: FFOP_MAX_EVENT_STREAMS
  value: {{ .maxEventStreams | int64 | quote }}
- name: FFOP_EVENT_STREAM_LIFETIME_SECONDS
  value: {{ .eventStreamLifetimeSeconds | int64 | quote }}
- name: FFOP_ABANDONED_UPLOAD_SECONDS
  value: {{ .abandonedUploadSeconds | int64 | quote }}
- name: FFOP_LOG_RETENTION_DAYS
  value: {{ .logRetentionDays | quote }}
{{- end }}
- name: FFOP_ALLOW_ADDRESSES
  value: {{ join "," .Values.allowAddresses | quote }}
- name: FFOP_WEBHOOK_ALLOW_ADDRESSES
  value: {{ join "," .Values.webhookAllowAddresses | quote }}
{{- with .Values.extraEnv }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/* Changes to the values behind the Secrets roll the pods (generated keys are kept, so they do not count). */}}
{{- define "ffmpeg-operator.secretsChecksum" -}}
{{- list .Values.database .Values.s3 .Values.jobToken .Values.signingKey | toJson | sha256sum }}
{{- end }}

{{/* Pod settings shared by the API and the operator pods. */}}
{{- define "ffmpeg-operator.podSpecCommon" -}}
{{- with .Values.imagePullSecrets }}
imagePullSecrets:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- if .Values.hostNetwork }}
hostNetwork: true
# Keeps Service names (the API's, in FFOP_REPORT_URL) resolvable on the node's network.
dnsPolicy: ClusterFirstWithHostNet
{{- end }}
securityContext:
  {{- toYaml .Values.podSecurityContext | nindent 2 }}
{{- with .Values.nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.affinity }}
affinity:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end }}

{{/* The operator's metrics port is off with hostNetwork: its replicas would take the same port of a node. */}}
{{- define "ffmpeg-operator.operatorMetricsOn" -}}
{{- if and .Values.metrics.enabled (not .Values.hostNetwork) }}true{{ end }}
{{- end }}

{{/* FFOP_METRICS_* of a container; pass (dict "ctx" $ "port" <port, or "off">). */}}
{{- define "ffmpeg-operator.metricsEnv" -}}
# All interfaces: Prometheus scrapes the pod from outside.
- name: FFOP_METRICS_HOST
  value: "0.0.0.0"
- name: FFOP_METRICS_PORT
  value: {{ .port | quote }}
{{- /* The generated token exists only with metrics.enabled. */}}
{{- if or .ctx.Values.metrics.tokenSecret.name .ctx.Values.metrics.enabled }}
- name: FFOP_METRICS_TOKEN
  valueFrom:
    secretKeyRef:
      name: {{ include "ffmpeg-operator.metricsTokenSecret" .ctx }}
      key: {{ .ctx.Values.metrics.tokenSecret.key }}
{{- end }}
{{- end }}

{{/* The Secret holding the /metrics token: the one named in values, else the generated keys Secret. */}}
{{- define "ffmpeg-operator.metricsTokenSecret" -}}
{{- .Values.metrics.tokenSecret.name | default (include "ffmpeg-operator.keysSecret" .) }}
{{- end }}

{{/*
operator.watchNamespaces as a JSON list, without the release namespace (its Role grants more) and
without repeats: ["*"] stays as it is.
*/}}
{{- define "ffmpeg-operator.watchedNamespaces" -}}
{{- $ns := .Release.Namespace }}
{{- $out := list }}
{{- range .Values.operator.watchNamespaces }}
{{- if and (ne . $ns) (not (has . $out)) }}{{ $out = append $out . }}{{ end }}
{{- end }}
{{- toJson $out }}
{{- end }}

{{/* What the operator does to FfmpegCommands in a watched namespace other than its own. */}}
{{- define "ffmpeg-operator.watchedCommandRules" -}}
# Take commands in (read them) and write their status (merge patches); nothing else of theirs is
# written there: their Jobs run in the release namespace.
- apiGroups: [ffmpeg-operator.dev]
  resources: [ffmpegcommands]
  verbs: [get, list, watch]
- apiGroups: [ffmpeg-operator.dev]
  resources: [ffmpegcommands/status]
  verbs: [get, patch]
# Events on those commands (Queued, Refused, Started, ...), through either events API.
- apiGroups: ["", events.k8s.io]
  resources: [events]
  verbs: [create, patch]
{{- end }}

{{/* Annotations of the CRD upgrade hook's objects; pass the weight (lower: made first). */}}
{{- define "ffmpeg-operator.crdHookAnnotations" -}}
helm.sh/hook: pre-upgrade
helm.sh/hook-weight: {{ . | quote }}
helm.sh/hook-delete-policy: before-hook-creation,hook-succeeded
{{- end }}
