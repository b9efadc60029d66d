import { isSpanContextValid, Span, SpanStatusCode, trace } from '@opentelemetry/api';
import { randomBytes } from 'node:crypto';

/** The daemon's tracer: a no-op until an SDK is registered (see start-tracing.ts). */
export const tracer = trace.getTracer('pipemorph');

/** Runs `task` in a child span of the active one, recording failures. */
export function inSpan<T>(name: string, attributes: Record<string, string | number | boolean>, task: (span: Span) => Promise<T>): Promise<T> {
  return tracer.startActiveSpan(name, { attributes }, async (span) => {
    try {
      return await task(span);
    } catch (error) {
      span.recordException(error as Error);
      span.setStatus({ code: SpanStatusCode.ERROR, message: (error as Error).message });
      throw error;
    } finally {
      span.end();
    }
  });
}

/** Trace id of the active span, so a rank can link its spans to the decision; random when tracing is off. */
export function currentTraceId(): string {
  const context = trace.getActiveSpan()?.spanContext();
  return context && isSpanContextValid(context) ? context.traceId : randomBytes(16).toString('hex');
}
