{{/* Common names and labels of the coderag chart. */}}
{{- define "coderag.name" -}}
{{- printf "%s-coderag" .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "coderag.labels" -}}
app.kubernetes.io/name: coderag
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{/* Name of the Secret holding provider KEY's values: existingSecret or ours. */}}
{{- define "coderag.secretName" -}}
{{- $s := index .root.Values.secrets .key -}}
{{- if $s.existingSecret -}}{{ $s.existingSecret }}{{- else -}}{{ printf "%s-%s" (include "coderag.name" .root) .key }}{{- end -}}
{{- end -}}

{{/* Weaviate REST URL: config.WEAVIATE_URL, else the bundled chart's HTTP Service (port 80). */}}
{{- define "coderag.weaviateUrl" -}}
{{- if .Values.config.WEAVIATE_URL -}}{{ .Values.config.WEAVIATE_URL }}{{- else -}}
{{- printf "http://%s:80" (default .Release.Name .Values.weaviate.service.name) -}}
{{- end -}}
{{- end -}}

{{- define "coderag.weaviateGrpcHost" -}}
{{- if .Values.config.WEAVIATE_GRPC_HOST -}}{{ .Values.config.WEAVIATE_GRPC_HOST }}{{- else if .Values.config.WEAVIATE_URL -}}{{- else -}}
{{- .Values.weaviate.grpcService.name -}}
{{- end -}}
{{- end -}}

{{/* Environment shared by the bot and the indexer: ConfigMap + every provider Secret. */}}
{{- define "coderag.envFrom" -}}
- configMapRef:
    name: {{ include "coderag.name" . }}
{{- range $key := list "slack" "anthropic" "voyage" "teams" "confluence" "app" }}
- secretRef:
    name: {{ include "coderag.secretName" (dict "root" $ "key" $key) }}
    optional: true
{{- end }}
{{- end -}}

{{/* The container spec shared by both roles; pass (dict "root" . "role" "bot"|"indexer"). */}}
{{- define "coderag.container" -}}
- name: coderag
  image: {{ printf "%s:%s" .root.Values.image.repository .root.Values.image.tag | quote }}
  imagePullPolicy: {{ .root.Values.image.pullPolicy }}
  args: ["serve", "--host", "0.0.0.0", "--port", "3000"]
  env:
    - name: CODERAG_ROLE
      value: {{ .role | quote }}
    # /metrics has its own listener, on the pod IP so Prometheus can scrape it; no Service
    # or Ingress exposes this port (see values.yaml `metrics`).
    - name: CODERAG_METRICS_HOST
      value: {{ .root.Values.metrics.host | quote }}
    - name: CODERAG_METRICS_PORT
      value: {{ .root.Values.metrics.port | quote }}
  envFrom:
    {{- include "coderag.envFrom" .root | nindent 4 }}
  ports:
    - name: http
      containerPort: 3000
    - name: metrics
      containerPort: {{ .root.Values.metrics.port }}
  readinessProbe:
    httpGet: {path: /readyz, port: http}
    periodSeconds: 10
    timeoutSeconds: 5
    failureThreshold: 3
  livenessProbe:
    httpGet: {path: /healthz, port: http}
    periodSeconds: 20
    timeoutSeconds: 5
    failureThreshold: 3
  startupProbe:
    httpGet: {path: /healthz, port: http}
    periodSeconds: 5
    failureThreshold: 60
  securityContext:
    runAsNonRoot: true
    runAsUser: 10001
    allowPrivilegeEscalation: false
    capabilities: {drop: ["ALL"]}
  volumeMounts:
    - name: data
      mountPath: /data
{{- end -}}
