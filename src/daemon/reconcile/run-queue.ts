// One reconcile at a time: the requests that arrive while one runs are folded into a single next run.
import type { ReconcileTrigger } from '../telemetry/metrics.js';
import type { ReconcileRecord } from '../status/reconcile-record.js';
import { foldScope, type ChangedPaths, type RunScope } from './watch-scope.js';

type Waiter = { resolve: (record: ReconcileRecord | undefined) => void };

/** The trigger recorded for a folded run: a resync cycle beats a watch burst, which beats a retry. */
const RANK: Record<ReconcileTrigger, number> = {
  retry: 0,
  prune: 0,
  window: 0,
  wave: 0,
  watch: 1,
  startup: 2,
  resync: 3,
  manual: 4,
};

/** The requests folded into one run. */
interface NextRun {
  trigger: ReconcileTrigger;
  cycles: string[];
  waiters: Waiter[];
  scope?: RunScope;
}

export class RunQueue {
  private running: Promise<void> | undefined;
  private next: NextRun | undefined;

  /** `run` runs one reconcile; `open` says whether runs may start (not stopping, and leading). */
  constructor(
    private readonly run: (trigger: ReconcileTrigger, cycles: string[], scope: RunScope) => Promise<ReconcileRecord>,
    private readonly open: () => boolean,
  ) {}

  /** Folds a request into the next run, and starts it unless one runs; resolves with the record of that run. */
  add(trigger: ReconcileTrigger, cycle?: string, changed?: ChangedPaths): Promise<ReconcileRecord | undefined> {
    return new Promise((resolve) => {
      if (!this.next) this.next = { trigger, cycles: [], waiters: [] };
      if (RANK[trigger] > RANK[this.next.trigger]) this.next.trigger = trigger;
      if (cycle) this.next.cycles.push(cycle);
      this.next.scope = foldScope(this.next.scope, trigger, changed);
      this.next.waiters.push({ resolve });
      if (!this.running) this.running = this.drain();
    });
  }

  /** Resolves when no run is in progress. */
  async idle(): Promise<void> {
    await this.running;
  }

  private async drain(): Promise<void> {
    while (this.next && this.open()) {
      const batch = this.next;
      this.next = undefined;
      const record = await this.run(batch.trigger, batch.cycles, batch.scope ?? 'all');
      for (const waiter of batch.waiters) waiter.resolve(record);
    }
    if (this.next) for (const waiter of this.next.waiters) waiter.resolve(undefined);
    this.next = undefined;
    this.running = undefined;
  }
}
