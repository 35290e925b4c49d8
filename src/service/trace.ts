// converge's spans through the OpenTelemetry API (no-ops unless src/cli/tracing.ts started the SDK): the tracer, a span per service request, a job's W3C traceparent.
import {
  context,
  SpanKind,
  SpanStatusCode,
  trace,
  TraceFlags,
  type Link,
  type Span,
  type SpanContext,
  type Tracer,
} from '@opentelemetry/api';
import { VERSION } from './version.js';

/** The tracer every converge span comes from (the SDK's when one is registered, else the API's no-op). */
export function tracer(): Tracer {
  return trace.getTracer('converge', VERSION);
}

const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;

/** The W3C `traceparent` of a span (version 00), or undefined for a no-op span (tracing off). */
export function traceparentOf(span: Span): string | undefined {
  const sc = span.spanContext();
  if (!trace.isSpanContextValid(sc)) return undefined;
  return `00-${sc.traceId}-${sc.spanId}-${(sc.traceFlags & TraceFlags.SAMPLED ? TraceFlags.SAMPLED : TraceFlags.NONE).toString(16).padStart(2, '0')}`;
}

/** The span a W3C `traceparent` names, as a link (undefined when absent or not a valid traceparent). */
export function linkTo(traceparent: string | undefined): Link | undefined {
  const match = traceparent === undefined ? null : TRACEPARENT.exec(traceparent);
  if (!match) return undefined;
  const spanContext: SpanContext = {
    traceId: match[1]!,
    spanId: match[2]!,
    traceFlags: Number.parseInt(match[3]!, 16),
    isRemote: true,
  };
  return trace.isSpanContextValid(spanContext) ? { context: spanContext } : undefined;
}

/** One request's span: its method and route template, never its path, query, body or headers. */
export interface RequestSpan {
  end(status: number | 'network'): void;
}

/**
 * A client span for one request to the service, a child of the span active now (a job's, a reconcile's); none when no
 * span is active, so a request outside a job or a reconcile (the rollout poller) starts no trace of its own.
 */
/** `host` is host[:port] of the service. */
export function requestSpan(method: string, route: string, host: string): RequestSpan | undefined {
  const parent = trace.getSpan(context.active());
  if (!parent || !parent.isRecording()) return undefined;
  const server = new URL(`http://${host}`);
  const span = tracer().startSpan(`${method} ${route}`, {
    kind: SpanKind.CLIENT,
    attributes: {
      'http.request.method': method,
      'url.template': route,
      'server.address': server.hostname,
      ...(server.port ? { 'server.port': Number(server.port) } : {}),
    },
  });
  return {
    end(status) {
      if (status === 'network') span.setStatus({ code: SpanStatusCode.ERROR, message: 'no answer' });
      else {
        span.setAttribute('http.response.status_code', status);
        if (status >= 400) span.setStatus({ code: SpanStatusCode.ERROR });
      }
      span.end();
    },
  };
}

/**
 * Runs `fn` as a new trace's root span `name` (a job's), linked to the span `traceparent` names when it carries one, and
 * active while `fn` runs, so the requests it sends are its children; a throw marks the span failed and is rethrown.
 */
export async function inLinkedSpan<T>(
  name: string,
  attributes: Record<string, string | number>,
  traceparent: string | undefined,
  fn: () => Promise<T>,
): Promise<T> {
  const link = linkTo(traceparent);
  const span = tracer().startSpan(name, { root: true, attributes, ...(link ? { links: [link] } : {}) });
  try {
    return await context.with(trace.setSpan(context.active(), span), fn);
  } catch (error) {
    span.setStatus({ code: SpanStatusCode.ERROR, message: error instanceof Error ? error.name : 'failed' });
    throw error;
  } finally {
    span.end();
  }
}
