// What the inner reconcile (cycle.ts) needs from the daemon, and the ports it reaches through: the context act.ts and reconciler.ts share.
import type { ServiceClient } from '../../service/client.js';
import type { ResourceHold } from '../../core/holds.js';
import type { AppliedRecord, DriftPolicy } from '../../core/model.js';
import type { RevisionReading } from '../../core/kinds/index.js';
import type { Environment } from '../../observe/environment.js';
import type { Enqueuer } from '../../jobs/queue/enqueuer.js';
import type { AdoptPolicy } from '../../core/ownership.js';
import type { ManifestCache } from '../../observe/manifests.js';
import type { DesiredMemory } from '../../core/drift.js';
import type { LastGoodManifests } from './last-good.js';
import type { OutcomeInputs } from '../../plan/outcomes.js';
import type { Conflict } from '../../core/flap-guard.js';
import type { ManifestVersion } from '../../core/manifest-version.js';
import type { Absence, PruneMode } from '../../core/prune-grace.js';
import type { DeleteConfirmation } from '../../core/job-intent.js';
import type { WindowGate } from './window-gate.js';
import type { WaveLimit } from '../../core/waves.js';

/** What the inner reconcile needs; the outer (daemon.ts) owns it. */
export interface CycleContext {
  /** Absolute manifest directory. */
  dir: string;
  /** Variables files and overlay directories read with it (docs/environments.md). */
  environment?: Environment | undefined;
  env: NodeJS.ProcessEnv;
  client: ServiceClient;
  /** Adds the jobs (newest desired state of each resource wins). */
  enqueuer: Pick<Enqueuer, 'enqueue' | 'inFlightJob'>;
  applied: {
    getAll(): Promise<Map<string, AppliedRecord>>;
    /** One resource's record (a targeted reconcile reads only those it decides: src/daemon/cycle/targeted.ts). */
    get?(key: string): Promise<AppliedRecord | undefined>;
    /** Resources with a write whose answer is not known yet: their job settles it, so they are never held. */
    pendingKeys?(): Promise<Set<string>>;
    /** Records which declared resources carry converge/prune: "false" (AppliedStateStore.recordKeep). */
    recordKeep?(declared: Iterable<string>, keep: ReadonlySet<string>): Promise<void>;
    /** Records the file that declares each resource (AppliedStateStore.recordFiles). */
    recordFiles?(files: ReadonlyMap<string, string>, known?: ReadonlyMap<string, AppliedRecord>): Promise<void>;
    /** Records the converge/wave of each declared resource (AppliedStateStore.recordWaves). */
    recordWaves?(waves: ReadonlyMap<string, number>, known?: ReadonlyMap<string, AppliedRecord>): Promise<void>;
    /** The prune absences remembered (src/core/prune-grace.ts), and their replacement (AppliedStateStore). */
    absences?(): Promise<Map<string, Absence>>;
    recordAbsences?(before: ReadonlyMap<string, Absence>, next: ReadonlyMap<string, Absence>): Promise<void>;
    /** The confirmations of pending deletes a person stored (`converge reconcile --confirm-delete NAME`; AppliedStateStore). */
    confirmations?(): Promise<Map<string, DeleteConfirmation>>;
  };
  memory: DesiredMemory;
  lastGood: LastGoodManifests;
  settings: {
    allowLocalDiscovery: boolean;
    driftPolicy: DriftPolicy;
    namePrefix?: string | undefined;
    /** adopt setting (default auto). */
    adopt?: AdoptPolicy;
    /** --prune, --max-deletes, --prune-tracing-projects (default: prune off). */
    prune?: boolean;
    maxDeletes?: number;
    pruneTracingProjects?: boolean;
    /** prune_grace (ms) and prune_mode (src/core/prune-grace.ts; default 60 s, auto). */
    pruneGrace?: number;
    pruneMode?: PruneMode;
    /** flap_window (ms): how long the flap guard keeps the versions a leader term read (default DEFAULT_FLAP's). */
    flapWindow?: number;
    /** wave_max_in_flight: at most this many writes of the current wave in flight (src/core/waves.ts; none: the whole wave). */
    waveMaxInFlight?: WaveLimit | undefined;
  };
  /**
   * The one clock of every replica (Redis' TIME, src/store/clock.ts), in ms: a delete's absence is timed on it, so a
   * replica whose wall clock is wrong can neither shorten nor stretch the grace another replica started. Absent: this
   * process's clock (a context without Redis).
   */
  now?: () => Promise<number>;
  /** Asks for a reconcile in `ms` from now, when a delete waiting for prune_grace falls due; undefined: none waits (each call replaces the last). */
  schedulePrune?: (ms: number | undefined) => void;
  /**
   * The deletes a reconcile enqueued on a person's confirmation, told to the request that asked (the confirmations
   * themselves are read from Redis: applied.confirmations).
   */
  deleteConfirms?: { done(key: string): void };
  /** Change windows (src/daemon/cycle/window-gate.ts): inside a blocking one, the writes wait (WindowHeld); absent: none. */
  windows?: WindowGate;
  /** Parse results kept between reconciles: an edit re-parses only the files whose bytes changed. */
  manifestCache?: ManifestCache;
  /** Called right after each job is enqueued (before the reconcile ends), so a fast job's result is never missed. */
  onEnqueued?: (job: EnqueuedJob) => void;
  /**
   * Whether a job of this resource carrying this desired state finished since this reconcile began: the live state
   * the plan read may predate it, so the change it plans is that job's, already done.
   */
  finishedSince?: (key: string, desired: string) => boolean;
  /** Resources an operator asked to have their secrets written although they cannot be compared (POST /reconcile). */
  secretWrites?: SecretWrites;
  /** Holds (src/core/holds.ts): a resource held for its current desired state gets no write. */
  holds?: HoldStore;
  /**
   * Resources whose hold an operator released (`converge reconcile --retry-failed`): one whose plan has nothing to
   * write gets a rebuild job (its unchanged revision fields, a new revision of the same input).
   */
  rebuilds?: { wanted(key: string): boolean; done(key: string): void };
  /** The flap guard's standing conflicts (src/store/flap-store.ts): a held desired state is not enqueued again. */
  conflicts?: ConflictsView;
  /**
   * The leader lease's fencing token while this replica holds it, undefined once lost (see leadership.ts): stamped on
   * every job, and a lost lease stops the enqueue (NotLeaderError). Absent: no lease (every job goes in, unstamped).
   */
  fence?: () => number | undefined;
  /** What the daemon knows of rollouts between reconciles (the status tracker): health needs no second read of them. */
  rollouts?: RolloutView;
  /** The reconcile's step clock and trace (src/daemon/telemetry/reconcile-steps.ts); absent: steps are not timed. */
  steps?: ReconcileSteps;
  /** The decision of one resource: src/core/decide.ts `decide` unless given (a test wraps it to count its calls). */
  decide?: OutcomeInputs['decide'];
}

/**
 * The steps of a reconcile, each a wall-clock segment (one step runs at a time, so their sum is the reconcile's time):
 * manifests (read and parse the files; the listing's first pages arrive meanwhile), listing (what of the live listing,
 * applied state, repositories, providers and secret hashes is left once the files are parsed), revisions (the latest
 * revisions read for health), decision (plan and decide), enqueue (the jobs added), state (converge's own keys in Redis:
 * pending writes, declarations, prune absences, memory, holds, conflicts). docs/monitoring.md describes each.
 */
export const RECONCILE_STEPS = ['manifests', 'listing', 'revisions', 'decision', 'enqueue', 'state'] as const;
export type ReconcileStep = (typeof RECONCILE_STEPS)[number];

/** How the inner reconcile marks its steps; the outer loop times and traces them. */
export interface ReconcileSteps {
  /** Ends the step running now and starts `step`. */
  enter(step: ReconcileStep): void;
  /** The W3C traceparent of the reconcile's span, which each job it enqueues carries (undefined: tracing off). */
  traceparent(): string | undefined;
}

/** The daemon's memory of rollouts (ResourceTracker satisfies it). */
export interface RolloutView {
  /** The revision the poller last read for `key`, when it is `revisionId`. */
  reading(key: string, revisionId: string): RevisionReading | undefined;
  /** Whether `key`'s health is already about `revisionId` (the poller follows it): no read of it at a reconcile. */
  knows(key: string, revisionId: string): boolean;
  /** Since when `key` is known to build `revisionId` (ms). */
  rolloutSince(key: string, revisionId: string | null): number;
  readonly deadlineMs: number;
  now(): number;
}

/** Where holds live (src/store/holds-store.ts). */
export interface HoldStore {
  getAll(): Promise<Map<string, ResourceHold>>;
  set(key: string, hold: ResourceHold): Promise<void>;
  release(keys: readonly string[]): Promise<number>;
}

/** The flap guard's conflicts as a reconcile sees them (FlapStore satisfies it). */
export interface ConflictsView {
  all(): Promise<Map<string, Conflict>>;
  /** Releases the conflicts of `keys`; `forget` false keeps their recent writes on record. */
  release(keys: readonly string[], forget?: boolean): Promise<string[]>;
  /** Records that the leader of term `token` read `version`, before it enqueues from it (FlapStore.recordRead). */
  recordRead?(token: number, version: ManifestVersion, ttlMs: number): Promise<void>;
}

/** The operator's requests to write secrets that cannot be compared (`converge reconcile --write-secrets`). */
export interface SecretWrites {
  /** Whether the resource may be written now; `name` is its metadata.name, `key` its resourceKey. */
  approved(key: string, name: string): boolean;
  /** The resource's write was enqueued: the request for it is done. */
  done(key: string): void;
}

export interface EnqueuedJob {
  key: string;
  jobId: string;
  operation: string;
  /** Fingerprint of the desired state the job carries (remembered once the job completes). Deployments only. */
  fingerprint?: string;
  /** An earlier reconcile's job, still waiting or active with the same desired state: nothing was added. */
  inFlight?: boolean;
  /** The fingerprint of the desired state the job carries (every kind; set by the cycle). */
  desired?: string;
  /** The manifests the job's desired state came from (its write records them: the row's appliedFrom). */
  version?: ManifestVersion;
}
