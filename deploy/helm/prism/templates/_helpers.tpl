{{/* Names and labels shared by the templates. */}}
{{- define "prism.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "prism.selectorLabels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "prism.labels" -}}
{{ include "prism.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{- define "prism.secretName" -}}
{{- .Values.management.existingSecret | default (printf "%s-management" (include "prism.fullname" .)) -}}
{{- end -}}

{{/*
The MindIE-style config.json (config/README.md). Every listener binds the pod's addresses
(0.0.0.0, which MindIE asks to allow explicitly); the management and metrics listeners take
the keys of the mounted Secret; plain HTTP (TLS ends at the gateway or the mesh).
*/}}
{{- define "prism.configJson" -}}
{{- $server := dict
  "ipAddress" "0.0.0.0"
  "managementIpAddress" "0.0.0.0"
  "allowAllZeroIpListening" true
  "port" (int .Values.ports.http)
  "managementPort" (int .Values.ports.management)
  "metricsPort" (int .Values.ports.metrics)
  "httpsEnabled" false
  "managementApiKeyFile" "/etc/prism/keys/management-api-keys"
  "openHealthAndMetrics" true -}}
{{- $model := dict
  "modelName" .Values.model.name
  "modelWeightPath" .Values.model.path
  "npuMemSize" (int .Values.kvCacheGiB)
  "plugin_params" "{\"plugin_type\":\"prefix_cache\"}" -}}
{{- $deploy := dict
  "maxSeqLen" (int .Values.maxSeqLen)
  "maxInputTokenLen" (int .Values.maxInputTokenLen)
  "ModelConfig" (list $model)
  "maxLoras" (int .Values.lora.maxLoras)
  "maxLoraRank" (int .Values.lora.maxLoraRank) -}}
{{- $schedule := dict
  "maxBatchSize" (int .Values.schedule.maxBatchSize)
  "maxPrefillTokens" (int .Values.schedule.maxPrefillTokens)
  "cacheBlockSize" (int .Values.schedule.cacheBlockSize) -}}
{{- $backend := dict
  "ModelDeployConfig" $deploy
  "ScheduleConfig" $schedule
  "KvEventsConfig" (dict "endpoint" .Values.kvEvents.endpoint "topic" "") -}}
{{- toPrettyJson (dict "Version" "1.0.0" "ServerConfig" $server "BackendConfig" $backend) -}}
{{- end -}}
