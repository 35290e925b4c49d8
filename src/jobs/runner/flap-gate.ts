// The flap guard at the last gate before a write: the kind asks it right before the job's first write; a refusal is the job's result, a value (src/core/flap-guard.ts).
import {
  decideWrite,
  recordWrite,
  releasedBy,
  type Conflict,
  type FlapHistory,
  type FlapSettings,
  type WriteAttempt,
} from '../../core/flap-guard.js';
import type { ManifestVersion } from '../../core/manifest-version.js';
import type { AppliedRecord } from '../../core/model.js';
import type { SyncResult } from '../../core/kinds/index.js';
import type { FlapStore } from '../../store/flap-store.js';

/** A job's result when the guard refuses its write: nothing sent, and the conflict (its fields or versions, never a value). */
function heldResult(found: Conflict, declared: boolean): SyncResult {
  const { reason, message, versions, fields } = found;
  const conflict: NonNullable<SyncResult['conflict']> = { reason, message, declared };
  if (versions) conflict.versions = versions;
  if (fields) conflict.fields = fields;
  return { outcome: 'unchanged', new_revision: false, message: `Conflict: ${message}; nothing sent`, conflict };
}

export interface GateOptions {
  store: FlapStore;
  /** The applied record of the resource (its last write's desired state tells a heal). */
  appliedRecord(key: string): Promise<AppliedRecord | undefined>;
  key: string;
  desired: string | undefined;
  manifestVersion: ManifestVersion | undefined;
  /** The fencing token the job carries (a daemon leader's), undefined for apply's jobs. */
  fence?: number | undefined;
  settings: FlapSettings;
  /** The one clock the writes of every replica are timed on (Redis' TIME, src/store/clock.ts): the window's now. */
  now(): Promise<Date>;
  /** A standing conflict was released because this job asks for a desired state it does not hold. */
  onReleased?(conflict: Conflict): void;
}

/** One job's gate: decides once, at the job's first write (the kind asks it: SyncPorts.writeGate), and records that write afterwards. */
export class JobGate {
  private readonly options: GateOptions;
  private decision: Promise<SyncResult | undefined> | undefined;
  private attempt: { history: FlapHistory; write: WriteAttempt } | undefined;
  /** The conflict that refused this job's write, and whether this job found it (it was recorded now). */
  refusal: { conflict: Conflict; declared: boolean } | undefined;

  constructor(options: GateOptions) {
    this.options = options;
  }

  /**
   * Asked right before the job's first write (a create and its artifact PATCH are one write): undefined, the write may
   * go; a result, it must not (a Conflict), and that is the job's result: an outcome, never an exception.
   */
  check(): Promise<SyncResult | undefined> {
    this.decision ??= this.decide();
    return this.decision;
  }

  private async decide(): Promise<SyncResult | undefined> {
    const { store, key, desired, settings } = this.options;
    const fence = this.options.fence;
    // The versions the job's leader term read (a daemon's job only): whether a return to earlier manifests is its rollback.
    const [{ history, conflict }, applied, reads, now] = await Promise.all([
      store.read(key),
      this.options.appliedRecord(key),
      fence === undefined ? undefined : store.reads(fence),
      this.options.now(),
    ]);
    let standing = conflict;
    if (standing && releasedBy(standing, desired)) {
      await store.release([key], false);
      this.options.onReleased?.(standing);
      standing = undefined;
    }
    const write: WriteAttempt = {
      desired,
      version: this.options.manifestVersion,
      fence,
      reads,
      heal: desired !== undefined && applied?.desired === desired,
      now,
    };
    const decision = decideWrite(history, standing, write, settings);
    if (!decision.allow) {
      if (decision.declared) await store.declare(key, decision.conflict);
      this.refusal = { conflict: decision.conflict, declared: decision.declared };
      return heldResult(decision.conflict, decision.declared);
    }
    this.attempt = { history, write };
    return undefined;
  }

  /** After the sync: the write that went out joins the resource's history. */
  async recorded(result: SyncResult): Promise<void> {
    if (!this.attempt) return;
    const fields = (result.fields ?? []).map((f) => f.path);
    await this.options.store.setHistory(
      this.options.key,
      recordWrite(this.attempt.history, this.attempt.write, fields, this.options.settings),
    );
  }
}
