// The flap guard at the last gate before a write: a job's service port whose writes first ask the guard (src/core/flap-guard.ts).
import { decideWrite, recordWrite, releasedBy, type Conflict, type FlapHistory, type FlapSettings, type WriteAttempt } from '../core/flap-guard.js';
import type { ManifestVersion } from '../core/manifest-version.js';
import type { AppliedRecord } from '../core/model.js';
import type { SyncResult } from '../core/kinds/index.js';
import type { FlapStore } from '../store/flap-store.js';

/** The service calls that write (each may start a build of minutes on the real service). */
const WRITES = new Set<PropertyKey>(['createDeployment', 'patchDeployment', 'createProvider', 'discoverProvider', 'patchProvider']);

/** Thrown instead of sending a write the guard refuses; the job runner turns it into a completed job that sent nothing. */
export class ConflictHold extends Error {
  readonly conflict: Conflict;
  /** This job found the conflict (it was recorded now); false: it was standing already. */
  readonly declared: boolean;

  constructor(conflict: Conflict, declared: boolean) {
    super(`Conflict: ${conflict.message}`);
    this.name = 'ConflictHold';
    this.conflict = conflict;
    this.declared = declared;
  }

  /** The job's result: nothing sent, and the conflict (its fields or versions, never a value). */
  result(): SyncResult {
    const { reason, message, versions, fields } = this.conflict;
    const conflict: NonNullable<SyncResult['conflict']> = { reason, message, declared: this.declared };
    if (versions) conflict.versions = versions;
    if (fields) conflict.fields = fields;
    return { outcome: 'unchanged', new_revision: false, message: `Conflict: ${message}; nothing sent`, conflict };
  }
}

export interface GateOptions {
  store: FlapStore;
  /** The applied record of the resource (its last write's desired state tells a heal). */
  appliedRecord(key: string): Promise<AppliedRecord | undefined>;
  key: string;
  desired: string | undefined;
  manifestVersion: ManifestVersion | undefined;
  settings: FlapSettings;
  now(): Date;
  /** A standing conflict was released because this job asks for a desired state it does not hold. */
  onReleased?(conflict: Conflict): void;
}

/** One job's gate: decides once, at the job's first write, and records that write afterwards. */
export class JobGate {
  private readonly options: GateOptions;
  private decision: Promise<void> | undefined;
  private attempt: { history: FlapHistory; write: WriteAttempt } | undefined;

  constructor(options: GateOptions) {
    this.options = options;
  }

  /** Whether a write of this job went out (the guard let it). */
  get wrote(): boolean {
    return this.attempt !== undefined;
  }

  /** `service` with each write behind the gate; reads pass straight through. */
  guard<T extends object>(service: T): T {
    return new Proxy(service, {
      get: (target, property) => {
        const value = Reflect.get(target, property, target) as unknown;
        if (typeof value !== 'function') return value;
        const method = value as (...args: unknown[]) => unknown;
        if (!WRITES.has(property)) return method.bind(target);
        return async (...args: unknown[]) => {
          await this.beforeWrite();
          return method.apply(target, args);
        };
      },
    });
  }

  /** Throws ConflictHold when the write must not go out. Decided once per job (a create and its artifact PATCH are one write). */
  beforeWrite(): Promise<void> {
    this.decision ??= this.decide();
    return this.decision;
  }

  private async decide(): Promise<void> {
    const { store, key, desired, settings } = this.options;
    const [{ history, conflict }, applied] = await Promise.all([store.read(key), this.options.appliedRecord(key)]);
    let standing = conflict;
    if (standing && releasedBy(standing, desired)) {
      await store.release([key], false);
      this.options.onReleased?.(standing);
      standing = undefined;
    }
    const write: WriteAttempt = { desired, version: this.options.manifestVersion, heal: desired !== undefined && applied?.desired === desired, now: this.options.now() };
    const decision = decideWrite(history, standing, write, settings);
    if (!decision.allow) {
      if (decision.declared) await store.declare(key, decision.conflict);
      throw new ConflictHold(decision.conflict, decision.declared);
    }
    this.attempt = { history, write };
  }

  /** After the sync: the write that went out joins the resource's history. */
  async recorded(result: SyncResult): Promise<void> {
    if (!this.attempt) return;
    const fields = (result.fields ?? []).map((f) => f.path);
    await this.options.store.setHistory(this.options.key, recordWrite(this.attempt.history, this.attempt.write, fields, this.options.settings));
  }
}
