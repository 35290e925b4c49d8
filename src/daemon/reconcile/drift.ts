// Drift logged: each resource's drift said when it appears or changes (the rules that find it: src/core/drift.ts, src/core/decide.ts).
import type { Logger } from 'pino';
import type { ReconcileOutcome } from '../cycle/cycle.js';

/** Remembers the drift it last logged of each resource, so a resync that finds the same says nothing again. */
export class DriftLog {
  /** Per resource, the drift last logged (policy, fields, desired state): logged again only when it changes. */
  private loggedDrift = new Map<string, string>();

  constructor(private readonly log: Logger) {}

  /**
   * Drift is said when it appears or changes (its policy, fields or desired state), not at every resync: /status and
   * converge_drifted_resources keep it in between. A heal is said each time it writes (a new job reverts it again).
   * Each line says who changed it (its reason: a change made outside converge, and when).
   */
  found(outcome: ReconcileOutcome): void {
    const now = new Map<string, string>();
    for (const d of outcome.drift) {
      const heals = d.policy === 'heal' && outcome.outcomes.get(d.key)?.write !== null;
      const seen = `${d.policy}|${d.fields.join(',')}|${d.fingerprint ?? ''}`;
      now.set(d.key, seen);
      if (!heals && this.loggedDrift.get(d.key) === seen) continue;
      if (heals)
        this.log.info(
          { key: d.key, fields: d.fields, policy: 'heal', reason: d.reason },
          'drift found: reverting the live deployment to its manifest',
        );
      else
        this.log.warn(
          { key: d.key, fields: d.fields, policy: d.policy, reason: d.reason },
          'drift reported: the live deployment differs from its unchanged manifest; not reverted (drift policy report)',
        );
    }
    this.loggedDrift = now;
  }
}
