// One reconcile's step clock and trace: its time cut into consecutive steps (wall segments), each a span under the reconcile's span, and their totals for converge_reconcile_step_seconds.
import { context, SpanStatusCode, trace, type Span } from '@opentelemetry/api';
import { traceparentOf, tracer } from '../../service/trace.js';
import type { ReconcileStep, ReconcileSteps } from '../cycle/cycle-context.js';

/** What a reconcile's clock measured: its whole duration and the seconds of each step it entered (summed over its segments). */
export interface TimedReconcile {
  seconds: number;
  steps: ReadonlyMap<ReconcileStep, number>;
}

/**
 * Started by the outer loop when a reconcile starts; the inner reconcile marks where each step begins (`enter`), which
 * ends the one before, so the steps never overlap and their sum is the time from the first mark to `end`. The clock is
 * performance.now(); the spans are the API's no-ops unless the SDK was started (src/cli/tracing.ts).
 */
export class ReconcileClock implements ReconcileSteps {
  private readonly started = performance.now();
  private readonly root: Span;
  private readonly totals = new Map<ReconcileStep, number>();
  private current: { step: ReconcileStep; at: number; span: Span } | undefined;

  constructor(attributes: { trigger: string; id: number }) {
    this.root = tracer().startSpan('reconcile', {
      root: true,
      attributes: { 'converge.reconcile.trigger': attributes.trigger, 'converge.reconcile.id': attributes.id },
    });
  }

  enter(step: ReconcileStep): void {
    const now = performance.now();
    this.close(now);
    const span = tracer().startSpan(
      step,
      { attributes: { 'converge.reconcile.step': step } },
      trace.setSpan(context.active(), this.root),
    );
    this.current = { step, at: now, span };
  }

  traceparent(): string | undefined {
    return traceparentOf(this.root);
  }

  /** Runs the reconcile with its span active, so the requests it sends are its children. */
  within<T>(fn: () => Promise<T>): Promise<T> {
    return context.with(trace.setSpan(context.active(), this.root), fn);
  }

  /** Ends the last step and the reconcile's span (an error status when it failed). */
  end(failure: unknown): TimedReconcile {
    const now = performance.now();
    this.close(now);
    if (failure !== undefined)
      this.root.setStatus({ code: SpanStatusCode.ERROR, message: failure instanceof Error ? failure.name : 'failed' });
    this.root.end();
    return { seconds: (now - this.started) / 1000, steps: this.totals };
  }

  private close(now: number): void {
    const current = this.current;
    if (!current) return;
    this.totals.set(current.step, (this.totals.get(current.step) ?? 0) + (now - current.at) / 1000);
    current.span.end();
    this.current = undefined;
  }
}
