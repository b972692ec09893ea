/**
 * Whether spans are to be exported (OTLP/HTTP): the standard endpoint variables. Without them
 * a process registers no tracer provider (gateways/shared/tracing.ts); `prism engine` then not
 * even a context manager. Its own module so that asking loads no tracing SDK.
 */
export function traceExportConfigured(env: NodeJS.ProcessEnv = process.env): boolean {
  return Boolean(env.OTEL_EXPORTER_OTLP_ENDPOINT || env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT);
}
