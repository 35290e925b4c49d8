// One job's view of the applied-state store: writes stamped with their source and its id, pending writes with its id.
import type { AppliedStatePort, LostWritePort, PendingWrite, WrittenState } from '../../core/kinds/index.js';
import type { AppliedRecord } from '../../core/model.js';
import type { AppliedStateStore } from '../../store/applied-state.js';
import type { WriteStamp } from '../../store/applied-record-of-write.js';
import type { ReconcileJobData } from '../../store/schema.js';

/**
 * The applied-state port of one job: each write it records is stamped with the job's desired state, manifest version
 * and id, each write it marks pending with the job's id (`jobId`: a former leader's job settles only its own), and the
 * first record it reads is kept (`firstRead`): the flap guard tells a heal from it without reading again.
 */
export class JobAppliedState implements AppliedStatePort, LostWritePort {
  private readonly store: AppliedStateStore;
  private readonly stamp: WriteStamp;
  private readonly jobId: string | undefined;
  private first: { record: AppliedRecord | undefined } | undefined;
  private written: string | undefined;

  constructor(store: AppliedStateStore, data: ReconcileJobData, jobId?: string) {
    this.store = store;
    this.jobId = jobId;
    this.stamp = {
      ...(data.desired ? { desired: data.desired } : {}),
      ...(data.manifestVersion ? { manifestVersion: data.manifestVersion } : {}),
      ...(jobId === undefined ? {} : { jobId }),
    };
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
    return this.store.setPending(key, this.jobId === undefined ? pending : { ...pending, jobId: this.jobId });
  }

  clearPending(key: string): Promise<void> {
    return this.store.clearPending(key);
  }

  forget(key: string): Promise<void> {
    return this.store.forget(key);
  }

  /** The time of the last write this job recorded (Redis' clock, stamped by the store); undefined: none. */
  writtenAt(): string | undefined {
    return this.written;
  }

  async recordWrite(key: string, written: WrittenState, known?: AppliedRecord | null): Promise<AppliedRecord> {
    const record = await this.store.recordWrite(key, written, known, this.stamp);
    this.written = record.appliedAt;
    return record;
  }

  async recordSettled(
    key: string,
    pending: PendingWrite,
    written: WrittenState,
    known: AppliedRecord | null,
  ): Promise<AppliedRecord | undefined> {
    const record = await this.store.recordSettled(key, pending, written, known, this.stamp);
    if (record) this.written = record.appliedAt;
    return record;
  }

  clearSettled(key: string, pending: PendingWrite): Promise<boolean> {
    return this.store.clearSettled(key, pending);
  }
}
