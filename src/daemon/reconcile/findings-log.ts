// What a reconcile found (manifest problems, drift, why a resource is not written), logged when it appears or changes.
import type { Logger } from 'pino';
import { formatDiagnostic } from '../../core/diagnostics.js';
import { skipLine } from '../../core/decide.js';
import type { ReconcileOutcome } from '../cycle/cycle.js';

/** Reasons for not writing that are no news in the log: in sync, a job queued or just done, an orphan (its own line). */
const ROUTINE: ReadonlySet<string> = new Set(['Synced', 'Applied', 'Applying', 'Orphan']);

/** Remembers what it last logged of each kind, so a resync that finds the same says nothing again. */
export class FindingsLog {
  private loggedDiagnostics = new Set<string>();
  /** The prune refusal last logged (a file that fails to load, a guard), if one stands. */
  private loggedRefusal: string | undefined;
  /** Per resource, the drift last logged (policy, fields, desired state): logged again only when it changes. */
  private loggedDrift = new Map<string, string>();
  /** Per resource, why it was last logged as not written. */
  private loggedNotWritten = new Map<string, string>();

  constructor(private readonly log: Logger) {}

  /** Each manifest problem once, each file kept at its last good version once, and a prune refusal once, while they last. */
  diagnostics(outcome: ReconcileOutcome): void {
    const now = new Set(outcome.plan.diagnostics.map((d) => formatDiagnostic(d)));
    for (const line of now) if (!this.loggedDiagnostics.has(line)) this.log.warn({ diagnostic: line }, 'manifest problem');
    for (const held of outcome.held) {
      if (!this.loggedDiagnostics.has(`held:${held.key}:${held.error}`)) {
        this.log.warn({ key: held.key, file: held.file, error: held.error }, 'manifest file has errors; the last good version of its resource stays in force');
      }
    }
    this.loggedDiagnostics = new Set([...now, ...outcome.held.map((h) => `held:${h.key}:${h.error}`)]);
    const refused = outcome.plan.prune_refused;
    if (refused !== undefined && refused !== this.loggedRefusal) this.log.warn({ reason: refused }, 'prune refused: nothing is deleted');
    this.loggedRefusal = refused;
  }

  /**
   * Drift is said when it appears or changes (its policy, fields or desired state), not at every resync: /status and
   * converge_drifted_resources keep it in between. A heal is said each time it writes (a new job reverts it again).
   * Each line says who changed it (its reason: a change made outside converge, and when).
   */
  drift(outcome: ReconcileOutcome): void {
    const now = new Map<string, string>();
    for (const d of outcome.drift) {
      const heals = d.policy === 'heal' && outcome.outcomes.get(d.key)?.write !== null;
      const seen = `${d.policy}|${d.fields.join(',')}|${d.fingerprint ?? ''}`;
      now.set(d.key, seen);
      if (!heals && this.loggedDrift.get(d.key) === seen) continue;
      if (heals) this.log.info({ key: d.key, fields: d.fields, policy: 'heal', reason: d.reason }, 'drift found: reverting the live deployment to its manifest');
      else this.log.warn({ key: d.key, fields: d.fields, policy: d.policy, reason: d.reason }, 'drift reported: the live deployment differs from its unchanged manifest; not reverted (drift policy report)');
    }
    this.loggedDrift = now;
  }

  /**
   * Why a resource is not written, in the words apply and status use (skipLine), logged when the reason appears or
   * changes; the routine ones (in sync, a job queued or just done, an orphan) are not news.
   */
  notWritten(outcome: ReconcileOutcome): void {
    const now = new Map<string, string>();
    for (const o of outcome.outcomes.values()) {
      if (!o.skip || ROUTINE.has(o.skip.code)) continue;
      const line = skipLine(o)!;
      now.set(o.key, line);
      if (this.loggedNotWritten.get(o.key) !== line) this.log.info({ key: o.key, reason: o.skip.code }, line);
    }
    this.loggedNotWritten = now;
  }
}
