// One job's view of the applied-state store: its writes stamped with where their desired state came from; its first read kept.
import type { AppliedStatePort, PendingWrite, WrittenState } from '../../core/kinds/index.js';
import type { AppliedRecord } from '../../core/model.js';
import type { AppliedStateStore, WriteStamp } from '../../store/applied-state.js';
import type { ReconcileJobData } from '../../store/schema.js';

/**
 * The applied-state port of one job: each write it records is stamped with the job's desired state and manifest
 * version, and the first record it reads is kept (`firstRead`): the flap guard tells a heal from it without reading again.
 */
export class JobAppliedState implements AppliedStatePort {
  private readonly store: AppliedStateStore;
  private readonly stamp: WriteStamp;
  private first: { record: AppliedRecord | undefined } | undefined;

  constructor(store: AppliedStateStore, data: ReconcileJobData) {
    this.store = store;
    this.stamp = { ...(data.desired ? { desired: data.desired } : {}), ...(data.manifestVersion ? { manifestVersion: data.manifestVersion } : {}) };
  }

  /** The resource's applied record as this job first read it (before any write of its own); read now if it has not. */
  async firstRead(key: string): Promise<AppliedRecord | undefined> {
    return this.first ? this.first.record : this.store.get(key);
  }

  async read(key: string): ReturnType<AppliedStatePort['read']> {
    const found = await this.store.read(key);
    this.first ??= { record: found.applied };
    return found;
  }

  setPending(key: string, pending: PendingWrite): Promise<void> {
    return this.store.setPending(key, pending);
  }

  clearPending(key: string): Promise<void> {
    return this.store.clearPending(key);
  }

  forget(key: string): Promise<void> {
    return this.store.forget(key);
  }

  recordWrite(key: string, written: WrittenState, at?: Date, known?: AppliedRecord | null): Promise<AppliedRecord> {
    return this.store.recordWrite(key, written, at, known, this.stamp);
  }
}
