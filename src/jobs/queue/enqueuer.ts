// The enqueuer: one reconcile job per resource through BullMQ's deduplication (its public API only); newest desired state wins.
import { Job, type Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import { ConvergeError } from '../../core/errors.js';
import { jobIdFor, jobOptions, QUEUE_NAME, type JobSettings } from './jobs.js';
import type { ReconcileJobData } from '../../store/schema.js';

export interface Enqueued {
  key: string;
  /** The job that will carry this desired state: our new job, or an existing waiting job whose data was replaced. */
  jobId: string;
  /**
   * in-flight: a waiting or active job of the resource already carries the same desired state; finished: such a job
   * completed while this enqueue looked at it, or the caller says it finished (enqueue's skipInFlight; jobId may then
   * be empty). Nothing was added either way.
   */
  how: 'added' | 'after-active' | 'replaced-waiting' | 'in-flight' | 'finished';
  /** With after-active: the running job of the resource that ours starts after. */
  behind?: string;
}

/**
 * `${prefix}:desired-seq`: the hash of resourceKey -> sequence of the newest desired state enqueued, a key of converge's
 * own beside its applied state (BullMQ's keys are `${prefix}:converge-apply:*`). HINCRBY in Redis orders the enqueues
 * of every host, with no wall clock compared.
 */
export function newestDesiredKey(prefix: string): string {
  return `${prefix}:desired-seq`;
}

/** Where older versions of converge kept the sequences: inside BullMQ's key space of the queue. Read once, to move them (see adoptLegacySequences). */
function legacyDesiredKey(prefix: string): string {
  return `${prefix}:${QUEUE_NAME}:desired-seq`;
}

/**
 * Moves the sequences an older converge kept inside BullMQ's key space to converge's own key, once
 * (RENAMENX: only while the new key does not exist; both keys share the prefix's hash tag, so one Cluster slot).
 * Without it, a job enqueued before an upgrade could carry a higher sequence than the newer jobs numbered afterwards.
 */
export async function adoptLegacySequences(redis: Pick<Redis, 'renamenx'>, prefix: string): Promise<void> {
  try {
    await redis.renamenx(legacyDesiredKey(prefix), newestDesiredKey(prefix));
  } catch (error) {
    // "no such key": nothing to move (a new prefix, or moved already).
    if (!/no such key/i.test((error as Error).message)) throw error;
  }
}

/** An enqueue by a replica that no longer holds the leader lease: refused before anything more is added. */
export class NotLeaderError extends ConvergeError {
  constructor() {
    super(
      'E_NOT_LEADER',
      'this replica lost the leader lease: nothing more is enqueued (the leader plans and enqueues)',
    );
  }
}

/** Jobs added per round trip by Enqueuer.enqueue. */
export const ENQUEUE_BATCH = 100;

/** Rounds of add-and-look before an enqueue gives up (each round means another process changed the job meanwhile). */
const MAX_ROUNDS = 8;

const WAITING_STATES = new Set(['waiting', 'delayed', 'prioritized', 'paused', 'waiting-children']);

/** What a waiter finds when it looks a job up directly (in case it missed the job's event). */
export type JobLookup =
  | { state: 'completed'; value: unknown }
  | { state: 'failed'; reason: string }
  | { state: 'unfinished' }
  | { state: 'gone' };

/** Where the enqueuer numbers desired states: converge's own connection and key prefix (never BullMQ's handle). */
interface SequenceStore {
  redis: Pick<Redis, 'hincrby'>;
  prefix: string;
}

/**
 * Adds reconcile jobs so that the newest desired state of each resource wins, through BullMQ's public API only. Each
 * job carries the deduplication id resourceKey with keepLastIfActive and replace (see jobs.ts jobOptions); BullMQ's
 * add answers with our job id or with the id of the job it deduplicated ours against, and the rest follows from that
 * job's state:
 * - no job for the resource: ours is added;
 * - a job is waiting out a delay (a retry backoff): BullMQ replaces it by ours (`replace`);
 * - a job is running: its stored data is first replaced by ours (Job.updateData; the run in progress keeps the data it
 *   started with), then ours is added, which BullMQ keeps to start when the running job ends (`keepLastIfActive`).
 *   Should the job have left `active` for `waiting` just before the add (handed back, rate-limited, stalled), BullMQ
 *   drops ours, but that job now carries our data: either way the next run of the resource is of our desired state;
 * - a job is waiting: BullMQ drops ours, so the waiting job's data is replaced by ours, confirmed still waiting
 *   afterwards so a worker cannot have started it with the old data unnoticed;
 * - the deduplication id names a job that finished or is gone: the id is cleared through BullMQ (only while it
 *   still names that job) and the add repeated.
 */
export class Enqueuer {
  readonly #queue: Queue;
  readonly #settings: JobSettings;
  readonly #sequences: SequenceStore;

  constructor(queue: Queue, settings: JobSettings, sequences: SequenceStore) {
    this.#queue = queue;
    this.#settings = settings;
    this.#sequences = sequences;
  }

  /**
   * Enqueues one job per resource, in batches of ENQUEUE_BATCH (one round trip a batch: a socket write per job is the
   * larger part of enqueueing); resources deduplicated against an existing job are then settled one by one.
   * Results in the order of `datas`. Refuses (E_ENQUEUE) a resource given twice.
   */
  async enqueue(
    datas: readonly ReconcileJobData[],
    /** Called for each resource as soon as its job is known (before the next batch), so no completion goes unseen. */
    onEnqueued?: (enqueued: Enqueued, index: number) => void,
    /**
     * Skip a resource whose waiting or active job carries the same desired state (`desired` of the job data): the
     * daemon's resync and watch reconciles, which would otherwise run the same work twice. A different desired state
     * still replaces or follows that job (the newest desired state wins).
     */
    options: {
      skipInFlight?: boolean;
      /**
       * Asked after the in-flight look-up, right before adding: true when a job of this desired state finished since
       * the caller read live state (its completion clears the deduplication id the look-up reads). Reported 'finished'.
       */
      finishedSince?: (data: ReconcileJobData) => boolean;
      /**
       * The daemon's leader lease: the fencing token while this replica holds it, undefined once it lost it. Asked
       * before every batch (a lost lease stops the enqueue with NotLeaderError); the token is stamped on every job.
       */
      fence?: () => number | undefined;
    } = {},
  ): Promise<Enqueued[]> {
    const keys = new Set<string>();
    for (const data of datas) {
      if (keys.has(data.key))
        throw new ConvergeError('E_ENQUEUE', `${data.key} is enqueued twice in one batch; give each resource once`);
      keys.add(data.key);
    }
    const out: Enqueued[] = [];
    for (let i = 0; i < datas.length; i += ENQUEUE_BATCH) {
      const token = this.#fenceNow(options.fence);
      let batch = datas
        .slice(i, i + ENQUEUE_BATCH)
        .map((data) => (token === undefined ? data : { ...data, fence: token }));
      let at = batch.map((_, k) => i + k);
      if (options.skipInFlight) {
        const inFlight = await Promise.all(batch.map((data) => this.#inFlight(data)));
        batch.forEach((data, k) => {
          if (inFlight[k] === undefined && options.finishedSince?.(data)) inFlight[k] = { jobId: '', finished: true };
        });
        for (let k = 0; k < batch.length; k++) {
          const found = inFlight[k];
          if (found === undefined) continue;
          out[at[k]!] = { key: batch[k]!.key, jobId: found.jobId, how: found.finished ? 'finished' : 'in-flight' };
          onEnqueued?.(out[at[k]!]!, at[k]!);
        }
        at = at.filter((_, k) => inFlight[k] === undefined);
        batch = batch.filter((_, k) => inFlight[k] === undefined);
      }
      this.#fenceNow(options.fence);
      batch = await this.#markNewest(batch);
      const ids = batch.map((data) => jobIdFor(data.key));
      const jobs = await this.#queue.addBulk(
        batch.map((data, k) => ({ name: data.operation, data, opts: jobOptions(this.#settings, data.key, ids[k]!) })),
      );
      const deduplicated: number[] = [];
      for (let k = 0; k < batch.length; k++) {
        if (jobs[k]!.id !== ids[k]) {
          deduplicated.push(k);
          continue;
        }
        out[at[k]!] = { key: batch[k]!.key, jobId: ids[k]!, how: 'added' };
        onEnqueued?.(out[at[k]!]!, at[k]!);
      }
      for (const k of deduplicated) {
        out[at[k]!] = await this.#settle(batch[k]!, ids[k]!, jobs[k]!.id!);
        onEnqueued?.(out[at[k]!]!, at[k]!);
      }
    }
    return out;
  }

  /**
   * The resource's job that carries `desired` when it is waiting or active (finished: false), or completed just now
   * (finished: true); undefined otherwise.
   */
  inFlightJob(key: string, desired: string): Promise<{ jobId: string; finished: boolean } | undefined> {
    return this.#inFlight({ key, desired } as ReconcileJobData);
  }

  /** The job the resource's deduplication id names now (the job that carries its newest desired state), if any. */
  async currentJobOf(key: string): Promise<string | undefined> {
    return (await this.#queue.getDeduplicationJobId(key)) ?? undefined;
  }

  /** A job's state and, once finished, its result or failure. */
  async lookup(jobId: string): Promise<JobLookup> {
    const state = await this.#queue.getJobState(jobId);
    if (state === 'unknown') return { state: 'gone' };
    if (state !== 'completed' && state !== 'failed') return { state: 'unfinished' };
    const job = await Job.fromId(this.#queue, jobId);
    // Removed between the two reads: the next look finds it gone.
    if (!job) return { state: 'unfinished' };
    if (state === 'completed') return { state: 'completed', value: job.returnvalue };
    return { state: 'failed', reason: job.failedReason ?? 'failed' };
  }

  /**
   * The resource's job named by its deduplication id when it carries the same desired state as `data` and is waiting,
   * active, or completed just now (the id is cleared when a job completes: it named the job a moment ago).
   */
  async #inFlight(data: ReconcileJobData): Promise<{ jobId: string; finished: boolean } | undefined> {
    if (!data.desired) return undefined;
    const jobId = await this.#queue.getDeduplicationJobId(data.key);
    if (!jobId) return undefined;
    const [state, job] = await Promise.all([this.#queue.getJobState(jobId), Job.fromId(this.#queue, jobId)]);
    const carried = job?.data as { desired?: unknown; fence?: unknown } | undefined;
    if (carried?.desired !== data.desired) return undefined;
    // A former leader's job (an older fencing token) is dropped by the worker: it does not count as in flight.
    if (data.fence !== undefined && (typeof carried.fence !== 'number' || carried.fence < data.fence)) return undefined;
    if (state === 'completed') return { jobId, finished: true };
    if (state === 'active' || WAITING_STATES.has(state)) return { jobId, finished: false };
    return undefined;
  }

  /**
   * Removes the jobs among `jobIds` that are still waiting (never started, or handed back): an interrupted apply
   * leaves nothing queued behind it. Returns the ids removed; a job running elsewhere (locked) is left alone.
   */
  async withdraw(jobIds: readonly string[]): Promise<string[]> {
    const removed: string[] = [];
    for (const jobId of jobIds) {
      if (!WAITING_STATES.has(await this.#queue.getJobState(jobId))) continue;
      if ((await this.#queue.remove(jobId)) === 1) removed.push(jobId);
    }
    return removed;
  }

  /** Whether the job is running (its lock held by a live worker, or by a dead one until the lock expires). */
  async isActive(jobId: string): Promise<boolean> {
    return (await this.#queue.getJobState(jobId)) === 'active';
  }

  /** The fencing token when the caller gives a lease; NotLeaderError once it is lost. */
  #fenceNow(fence: (() => number | undefined) | undefined): number | undefined {
    if (!fence) return undefined;
    const token = fence();
    if (token === undefined) throw new NotLeaderError();
    return token;
  }

  /**
   * Numbers, before the jobs are added, each resource's newest desired state (HINCRBY: Redis orders the enqueues of
   * every process): a job of an older run that runs later (its worker died, it was handed back) sees a newer
   * sequence and writes nothing (see worker.ts). Returns the datas with their sequence.
   */
  async #markNewest(datas: ReconcileJobData[]): Promise<ReconcileJobData[]> {
    if (datas.length === 0) return datas;
    const { redis, prefix } = this.#sequences;
    const key = newestDesiredKey(prefix);
    const seqs = await Promise.all(datas.map((data) => redis.hincrby(key, data.key, 1)));
    return datas.map((data, k) => ({ ...data, seq: seqs[k]! }));
  }

  /** The add loop after BullMQ deduplicated our job `jobId` against `existingId`. */
  async #settle(data: ReconcileJobData, jobId: string, deduplicatedTo: string): Promise<Enqueued> {
    const key = data.key;
    let existingId: string | undefined = deduplicatedTo;
    for (let round = 0; round < MAX_ROUNDS; round++) {
      if (existingId === undefined) {
        const added = await this.#add(data, jobId);
        if (added === jobId) return { key, jobId, how: 'added' };
        existingId = added;
      }
      const state = await this.#queue.getJobState(existingId);
      if (state === 'active') {
        const next = await this.#followActive(data, jobId, existingId);
        if (typeof next === 'object') return next;
        existingId = next;
        continue;
      }
      if (WAITING_STATES.has(state)) {
        if (await this.#replaceWaiting(existingId, data)) return { key, jobId: existingId, how: 'replaced-waiting' };
        existingId = undefined;
        continue;
      }
      // Completed, failed or gone, yet still named by the deduplication id (normally cleared when a job finishes).
      await this.#clearDeduplication(key, existingId);
      existingId = undefined;
    }
    throw new ConvergeError('E_ENQUEUE', `could not enqueue ${key}: its job kept changing state; try again`);
  }

  /**
   * The resource's job `existingId` is running: it is given our data, then ours is added to start after it. Otherwise
   * the id of another job the add named (the caller looks at it next), or undefined when the job finished or vanished
   * meanwhile (the caller adds again).
   */
  async #followActive(
    data: ReconcileJobData,
    jobId: string,
    existingId: string,
  ): Promise<Enqueued | string | undefined> {
    const running = await this.#queue.getJob(existingId);
    if (!running) return undefined;
    await running.updateData(data);
    const again = await this.#add(data, jobId);
    if (again === jobId) return { key: data.key, jobId, how: 'added' };
    if (again !== existingId) return again;
    const state = await this.#queue.getJobState(existingId);
    if (state === 'active') return { key: data.key, jobId, how: 'after-active', behind: existingId };
    // Back to waiting (it carries our data now): the waiting job is the one to follow.
    if (WAITING_STATES.has(state)) return { key: data.key, jobId: existingId, how: 'replaced-waiting' };
    return undefined;
  }

  /** Gives the waiting job `jobId` our data; true when it is still waiting afterwards (no worker took the old data). */
  async #replaceWaiting(jobId: string, data: ReconcileJobData): Promise<boolean> {
    const existing = await this.#queue.getJob(jobId);
    if (!existing) return false;
    await existing.updateData(data);
    return WAITING_STATES.has(await this.#queue.getJobState(jobId));
  }

  /**
   * Clears the deduplication id `key` while it still names the finished or vanished job `jobId`: through the job when
   * it is stored (BullMQ removes the id only if it names that job), else through the queue once the id is read to
   * name it still. Another producer's add in between those two reads would lose its deduplication id, not its job:
   * two jobs of the resource may then be queued, and the one with the older sequence writes nothing (worker.ts).
   */
  async #clearDeduplication(key: string, jobId: string): Promise<void> {
    const job = await this.#queue.getJob(jobId);
    if (job) {
      await job.removeDeduplicationKey();
      return;
    }
    if ((await this.#queue.getDeduplicationJobId(key)) === jobId) await this.#queue.removeDeduplicationKey(key);
  }

  /** Adds our job; the id of the job that carries it (ours, or the one BullMQ deduplicated it against). */
  async #add(data: ReconcileJobData, jobId: string): Promise<string> {
    const job = await this.#queue.add(data.operation, data, jobOptions(this.#settings, data.key, jobId));
    return job.id!;
  }
}
