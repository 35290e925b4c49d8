// The leader's reconciles as /status shows them, written to Redis (src/store/reconcile-record.ts) and read back.
import type { Logger } from 'pino';
import type { Plan } from '../../core/model.js';
import type { ReconcileRecordStore, StoredReconciles } from '../../store/reconcile-record.js';
import type { ReconcileRecord } from '../status/reconcile-record.js';
import type { ReconcileTrigger } from '../telemetry/metrics.js';

/** Reconciles kept (the newest last): what /status lists under `history`. */
const HISTORY = 50;

/** What /status shows of the leader's reconciles. */
export interface ReconcilesView {
  lastReconcile: ReconcileRecord | null;
  lastSuccessfulReconcileAt: string | null;
  reconciles: { total: number; failed: number; byTrigger: Record<string, number> };
  history: ReconcileRecord[];
  plan: Plan | null;
  manifests: StoredReconciles['manifests'];
  orphans: string[];
}

/** The reconciles this replica ran or took up, numbered on from a former leader's: what it writes to the record. */
export class ReconcileLedger {
  private sequence = 0;
  private failedTotal = 0;
  private readonly records: ReconcileRecord[] = [];
  private readonly byTrigger: Record<ReconcileTrigger, number> = {
    startup: 0,
    watch: 0,
    resync: 0,
    retry: 0,
    manual: 0,
    prune: 0,
    window: 0,
    wave: 0,
  };
  private plan: Plan | null = null;
  private lastSuccessAt: string | null = null;

  /** The id of the next reconcile. */
  next(): number {
    return ++this.sequence;
  }

  /** A reconcile ended: with its plan when it planned, `failed` when it failed (not when the lease was lost). */
  ended(record: ReconcileRecord, plan: Plan | undefined, failed: boolean): void {
    this.byTrigger[record.trigger as ReconcileTrigger] += 1;
    this.records.push(record);
    if (this.records.length > HISTORY) this.records.splice(0, this.records.length - HISTORY);
    if (plan) {
      this.plan = plan;
      this.lastSuccessAt = record.finishedAt;
    }
    if (failed) this.failedTotal += 1;
  }

  /** Takes up a former leader's record (a failover, a restart) when it ran more reconciles than this replica knows. */
  takeUp(kept: ReconcilesView): void {
    if (kept.reconciles.total <= this.sequence) return;
    this.sequence = kept.reconciles.total;
    this.failedTotal = kept.reconciles.failed;
    for (const [trigger, n] of Object.entries(kept.reconciles.byTrigger)) {
      if (trigger in this.byTrigger) this.byTrigger[trigger as ReconcileTrigger] = n;
    }
    this.records.splice(0, this.records.length, ...kept.history);
    this.lastSuccessAt = kept.lastSuccessfulReconcileAt;
    this.plan = kept.plan;
  }

  /** The manifests the last reconcile that read them read (git commit or content hash). */
  manifestVersion(): ReconcileRecord['manifestVersion'] {
    return this.records.findLast((r) => r.manifestVersion !== undefined)?.manifestVersion;
  }

  snapshot(): Omit<ReconcilesView, 'manifests' | 'orphans'> {
    return {
      lastReconcile: this.records.at(-1) ?? null,
      lastSuccessfulReconcileAt: this.lastSuccessAt,
      reconciles: { total: this.sequence, failed: this.failedTotal, byTrigger: { ...this.byTrigger } },
      history: [...this.records],
      plan: this.plan,
    };
  }
}

/** The record's store as the daemon uses it. */
export type ReconcilesStore = Pick<ReconcileRecordStore, 'write' | 'read'>;

/**
 * Writes the end of each reconcile to the record, one write at a time and in order (a failed write is warned about once
 * per outage; the next reconcile writes the whole record again). A write under a token a newer leader replaced is
 * refused by Redis: that leader's record stands. Without a store, or while Redis does not answer, it reads this
 * replica's own.
 */
export class ReconcilesRecord {
  private writing: Promise<void> = Promise.resolve();
  private failing = false;

  constructor(
    private readonly store: ReconcilesStore | undefined,
    private readonly options: { by: string; log: Logger; local: () => ReconcilesView },
  ) {}

  /** Queues the write of this replica's reconciles under `fence` (undefined: a daemon without a lease). */
  write(fence: number | undefined): void {
    const store = this.store;
    if (!store) return;
    const { lastReconcile: _last, plan, ...rest } = this.options.local();
    const record = { ...rest, by: this.options.by };
    this.writing = this.writing.then(async () => {
      try {
        const written = await store.write({ record, plan, fence });
        const refused = 'reconcile not recorded: a newer leader holds the lease (its record stands)';
        if (!written) this.options.log.info({ fence }, refused);
        if (this.failing) this.options.log.info({}, 'reconcile record written again');
        this.failing = false;
      } catch (error) {
        const message = 'could not write the reconcile record to Redis; the next reconcile writes it again';
        if (!this.failing) this.options.log.warn({ error: firstLine(error) }, message);
        this.failing = true;
      }
    });
  }

  /** Resolves when every write queued so far is done (or failed). */
  written(): Promise<void> {
    return this.writing;
  }

  /** Takes up what the record holds into `ledger` (a failover, a restart): the numbering goes on from it. */
  async restore(ledger: ReconcileLedger): Promise<void> {
    const kept = await this.read();
    if (kept) ledger.takeUp(kept);
  }

  /** The leader's reconciles as recorded; this replica's own when none is (a new prefix, a Redis lost or failing). */
  async view(): Promise<ReconcilesView> {
    const kept = await this.read().catch((error: unknown) => {
      const message = "could not read the reconcile record from Redis; /status shows this replica's";
      this.options.log.warn({ error: firstLine(error) }, message);
      return undefined;
    });
    return kept ?? this.options.local();
  }

  private async read(): Promise<ReconcilesView | undefined> {
    await this.writing;
    const kept = await this.store?.read();
    if (!kept) return undefined;
    const { record } = kept;
    const history = record.history as unknown as ReconcileRecord[];
    return {
      lastReconcile: history.at(-1) ?? null,
      lastSuccessfulReconcileAt: record.lastSuccessfulReconcileAt,
      reconciles: record.reconciles,
      history,
      plan: kept.plan as Plan | null,
      manifests: record.manifests,
      orphans: record.orphans,
    };
  }
}

function firstLine(error: unknown): string {
  return (error instanceof Error ? error.message : String(error)).split('\n')[0] ?? '';
}
