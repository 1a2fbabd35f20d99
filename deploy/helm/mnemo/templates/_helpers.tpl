{{/* Names, labels and the pieces every service's objects share. */}}

{{- define "mnemo.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "mnemo.fullname" -}}
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

{{/* A service's object name: <fullname>-<service>. Call with (dict "root" $ "service" "ingest"). */}}
{{- define "mnemo.serviceName" -}}
{{- printf "%s-%s" (include "mnemo.fullname" .root) .service | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "mnemo.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
app.kubernetes.io/name: {{ include "mnemo.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: mnemo
{{- end }}

{{/* Selector labels of one service's pods. Call with (dict "root" $ "service" "ingest"). */}}
{{- define "mnemo.selectorLabels" -}}
app.kubernetes.io/name: {{ include "mnemo.name" .root }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .service }}
{{- end }}

{{- define "mnemo.serviceLabels" -}}
{{ include "mnemo.labels" .root }}
app.kubernetes.io/component: {{ .service }}
{{- end }}

{{/* The Python module a service runs. */}}
{{- define "mnemo.module" -}}
mnemo.services.{{ .service | replace "-" "_" }}
{{- end }}

{{/* The JetStream workers and their consumers, generated from mnemo/shared/subjects.py. */}}
{{- define "mnemo.consumers" -}}
{{- (.Files.Get "files/consumers.json" | fromJson).workers | toJson }}
{{- end }}

{{/* The official NATS chart's full name (its own rule, so the names below match its objects). */}}
{{- define "mnemo.natsFullname" -}}
{{- $nats := .Values.nats | default dict }}
{{- if $nats.fullnameOverride }}
{{- $nats.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default "nats" $nats.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "mnemo.natsUrl" -}}
{{- if .Values.nats.enabled }}
{{- $svc := include "mnemo.natsFullname" . }}
{{- printf "nats://%s.%s.svc:4222" $svc .Release.Namespace }}
{{- else }}
{{- required "externalNats.url is required when nats.enabled is false" .Values.externalNats.url }}
{{- end }}
{{- end }}

{{/*
KEDA's natsServerMonitoringEndpoint. With the NATS chart's defaults (cluster.noAdvertise: true) KEDA learns the
nodes from /varz's route URLs (<nats>-<i>.<nats>-headless) and asks "<node>.<this endpoint>" for each node's
/jsz, so this must be the headless Service: "<nats>-headless.<namespace>.svc.cluster.local:<monitor port>".
*/}}
{{- define "mnemo.natsMonitoringEndpoint" -}}
{{- if .Values.nats.enabled }}
{{- printf "%s-headless.%s.svc.cluster.local:%v" (include "mnemo.natsFullname" .) .Release.Namespace .Values.nats.config.monitor.port }}
{{- else }}
{{- required "externalNats.monitoringEndpoint is required when nats.enabled is false" .Values.externalNats.monitoringEndpoint }}
{{- end }}
{{- end }}

{{- define "mnemo.kekSecret" -}}
{{- default (printf "%s-kek" (include "mnemo.fullname" .)) .Values.kek.secretName }}
{{- end }}

{{- define "mnemo.natsAuthSecret" -}}
{{- default (printf "%s-nats-auth" (include "mnemo.fullname" .)) .Values.natsAuth.existingSecret }}
{{- end }}

{{- define "mnemo.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}

{{/* Every NATS user of files/nats-auth.conf (each `user: "<name>"`), as a JSON list. */}}
{{- define "mnemo.natsUsers" -}}
{{- $users := list }}
{{- range $line := splitList "\n" (.Files.Get "files/nats-auth.conf") }}
{{- if contains "{ user: " $line }}
{{- $users = append $users (regexFind "user: \"[^\"]+\"" $line | trimPrefix "user: \"" | trimSuffix "\"") }}
{{- end }}
{{- end }}
{{- $users | toJson }}
{{- end }}
