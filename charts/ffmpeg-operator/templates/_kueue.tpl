{{/* Kueue mode (queueing.mode: kueue): names of the objects runner Jobs are queued through. */}}
{{- define "ffmpeg-operator.kueueOn" -}}
{{- if eq (dig "mode" "" (.Values.queueing | default dict) | toString) "kueue" }}true{{ end }}
{{- end }}

{{/* The LocalQueue in the release namespace that runner Jobs name in kueue.x-k8s.io/queue-name. */}}
{{- define "ffmpeg-operator.kueueLocalQueue" -}}
{{- .Values.queueing.kueue.localQueue.name | default (include "ffmpeg-operator.fullname" .) }}
{{- end }}

{{/* The ClusterQueue the LocalQueue points at: the chart's own, or an existing one by name. */}}
{{- define "ffmpeg-operator.kueueClusterQueue" -}}
{{- $cq := .Values.queueing.kueue.clusterQueue }}
{{- if and (not $cq.create) (not $cq.name) }}
{{- fail "queueing.kueue.clusterQueue.name is required when queueing.kueue.clusterQueue.create is false (the existing ClusterQueue to use)" }}
{{- end }}
{{- $cq.name | default (include "ffmpeg-operator.fullname" .) }}
{{- end }}

{{/* The ResourceFlavor the chart's ClusterQueue gives quota in: the chart's own, or an existing one. */}}
{{- define "ffmpeg-operator.kueueResourceFlavor" -}}
{{- $rf := .Values.queueing.kueue.resourceFlavor }}
{{- if and (not $rf.create) (not $rf.name) }}
{{- fail "queueing.kueue.resourceFlavor.name is required when queueing.kueue.resourceFlavor.create is false (the existing ResourceFlavor to use)" }}
{{- end }}
{{- $rf.name | default (include "ffmpeg-operator.fullname" .) }}
{{- end }}

{{/* The WorkloadPriorityClass of a plan; pass (dict "ctx" $ "plan" "free"). */}}
{{- define "ffmpeg-operator.kueuePriorityClass" -}}
{{- $pc := .ctx.Values.queueing.kueue.priorityClasses }}
{{- get ($pc.names | default dict) .plan | default (printf "%s-%s" (include "ffmpeg-operator.fullname" .ctx) .plan) }}
{{- end }}

{{/* FFOP_KUEUE_PRIORITY_CLASSES: plan=class pairs, comma separated, in the order of the plan names. */}}
{{- define "ffmpeg-operator.kueuePriorityClasses" -}}
{{- $pairs := list }}
{{- range $plan := keys .Values.queueing.kueue.priorityClasses.plans | sortAlpha }}
{{- $pairs = append $pairs (printf "%s=%s" $plan (include "ffmpeg-operator.kueuePriorityClass" (dict "ctx" $ "plan" $plan))) }}
{{- end }}
{{- join "," $pairs }}
{{- end }}
