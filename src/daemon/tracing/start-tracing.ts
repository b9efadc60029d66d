import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { NodeSDK } from '@opentelemetry/sdk-node';

/**
 * Tracing is off unless the standard OpenTelemetry environment asks for it: an OTLP endpoint
 * (OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) or OTEL_TRACES_EXPORTER=otlp.
 * OTEL_SDK_DISABLED=true always wins. An unreachable collector only loses spans: the exporter
 * retries and drops in the background, the daemon never waits for it.
 */
export function tracingRequested(env: NodeJS.ProcessEnv): boolean {
  if (env.OTEL_SDK_DISABLED === 'true') return false;
  if (env.OTEL_TRACES_EXPORTER !== undefined) return env.OTEL_TRACES_EXPORTER !== 'none';
  return Boolean(env.OTEL_EXPORTER_OTLP_ENDPOINT || env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT);
}

export function startTracing(env: NodeJS.ProcessEnv = process.env): NodeSDK | null {
  if (!tracingRequested(env)) return null;
  const sdk = new NodeSDK({ serviceName: env.OTEL_SERVICE_NAME ?? 'pipemorph', traceExporter: new OTLPTraceExporter() });
  sdk.start();
  return sdk;
}
