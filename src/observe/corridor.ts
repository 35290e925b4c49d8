// The one corridor of a reconcile: load, list, plan, read revisions, decide each resource once (docs/architecture.md).
import type { DecisionMode } from '../core/decide.js';
import { declaringFiles } from '../core/declared-files.js';
import { waveOf } from '../core/waves.js';
import type { AppliedRecord, DriftPolicy, ListedDeployment, Plan } from '../core/model.js';
import { plan, type PlanInput } from '../plan/plan.js';
import {
  decideOutcomes,
  healthNotes,
  type DecidedOutcomes,
  type DecisionMemory,
  type OutcomeInputs,
} from '../plan/outcomes.js';
import { gatherFrom, gatherPlanInput, type GatherOptions, type Gathered } from './gather.js';
import type { ManifestDirResult } from './manifests.js';
import { readLatestRevisions, type LatestRevisions } from './revisions.js';

/** Some manifest files already loaded, the live deployments of their names and their applied records being read. */
export interface FilesScope {
  files: GatherOptions;
  loaded: ManifestDirResult;
  live: Promise<ListedDeployment[]>;
  applied: Promise<Map<string, AppliedRecord>>;
}

/**
 * What a reconcile reads: the whole tree (every manifest, the full listing: plan, apply, the daemon's full reconcile)
 * or some files (the daemon's targeted reconcile, src/daemon/cycle/targeted.ts).
 */
export type CorridorScope = { tree: GatherOptions } | FilesScope;

/** The steps of the corridor a caller may time (the daemon's step clock names them alike). */
export type CorridorStep = 'revisions' | 'decision';

/** A caller's answer that the input loaded is not decided here, and why (the daemon's targeted reconcile gives way). */
export interface CorridorDeclined {
  declined: string;
}

/** What the caller remembers of the resources (the daemon's Redis), read after the plan and before the revisions. */
export interface CorridorMemory {
  memory: DecisionMemory;
  /** A revision already known (the poller's, or its failure's hold): not read again. */
  known?: (key: string, revisionId: string) => boolean;
}

/** How the resources are decided: who decides, the drift policy, the clock of the progress deadline (read then). */
export interface CorridorDecision {
  mode: DecisionMode;
  driftPolicy?: DriftPolicy;
  now: () => number;
  progressDeadlineMs?: number | undefined;
  decide?: OutcomeInputs['decide'];
}

/** How a caller walks the corridor; `D`, given explicitly, is its way to decline the input loaded (none by default). */
export interface CorridorOptions<D extends CorridorDeclined = never> {
  scope: CorridorScope;
  decision: CorridorDecision;
  /** The input to plan from what was loaded: as gathered, narrowed (--target), at the last good version; or none. */
  input?: (gathered: Gathered) => NoInfer<PlanInput | D> | Promise<NoInfer<PlanInput | D>>;
  /** The plan the resources are decided from (the daemon's deletes through prune_grace). */
  planned?: (result: Plan, gathered: Gathered) => Promise<Plan>;
  /** What the caller remembers of the resources, for their decision. */
  memory?: (gathered: Gathered, input: PlanInput) => Promise<CorridorMemory>;
  /** The plan carries a health note for each rollout not healthy (plan and apply print them). */
  healthNotes?: boolean;
  onStep?: (step: CorridorStep) => void;
}

/** What a reconcile read and decided: every planned resource's outcome, once, with the input it was decided from. */
export interface Corridor extends DecidedOutcomes {
  gathered: Gathered;
  /** The input the plan was made from. */
  input: PlanInput;
  plan: Plan;
  /** The latest revisions read for health, and the requests sent for them. */
  revisions: LatestRevisions;
}

/**
 * Load → list → plan → decide (src/plan/outcomes.ts, src/core/decide.ts), the one path of every reconcile. Throws what
 * loading or listing throws (a directory that cannot be read, the service not answering): nothing is decided then.
 */
export async function reconcileCorridor<D extends CorridorDeclined = never>(
  options: CorridorOptions<D>,
): Promise<Corridor | D> {
  const { scope } = options;
  const gathered = 'tree' in scope ? await gatherPlanInput(scope.tree) : await gatherScope(scope);
  const input = options.input ? await options.input(gathered) : gathered.input;
  if (isDeclined(input)) return input;
  // The changes diffed while the manifests compiled are taken where they fit this input (src/plan/prepared.ts).
  const planned = plan(input, gathered.prepared);
  const result = options.planned ? await options.planned(planned, gathered) : planned;
  const remembered = options.memory ? await options.memory(gathered, input) : { memory: {} };
  options.onStep?.('revisions');
  // Health is read, not guessed: the latest revision of each deployment whose latest is not active, unless known.
  const client = 'tree' in scope ? scope.tree.client : scope.files.client;
  const known = remembered.known ? { known: remembered.known } : {};
  const revisions = await readLatestRevisions(client, result.changes, gathered.live.deployments, known);
  options.onStep?.('decision');
  const { decision } = options;
  const decided = decideOutcomes(result, {
    mode: decision.mode,
    resources: gathered.resources,
    live: gathered.live.deployments,
    revisions: revisions.readings,
    secretHashes: gathered.input.secretHashes,
    ...(decision.driftPolicy ? { driftPolicy: decision.driftPolicy } : {}),
    now: decision.now(),
    ...(decision.progressDeadlineMs !== undefined ? { progressDeadlineMs: decision.progressDeadlineMs } : {}),
    memory: remembered.memory,
    ...(decision.decide ? { decide: decision.decide } : {}),
  });
  if (options.healthNotes) {
    const health = healthNotes(decided.outcomes);
    if (health.length > 0) result.health = health;
  }
  return { gathered, input, plan: result, revisions, ...decided };
}

/** Where the declarations are kept (AppliedStateStore: recordKeep, recordFiles); a store without them records none. */
export interface DeclarationsStore {
  recordKeep?(declared: Iterable<string>, keep: ReadonlySet<string>): Promise<void>;
  recordFiles?(files: ReadonlyMap<string, string>, known?: ReadonlyMap<string, AppliedRecord>): Promise<void>;
  recordWaves?(waves: ReadonlyMap<string, number>, known?: ReadonlyMap<string, AppliedRecord>): Promise<void>;
}

/**
 * What prune reads of the manifests a reconcile loaded, kept in the applied state: the resources that carry
 * converge/prune: "false" (remembered per resource, so it still holds once the manifest is gone), the file that
 * declares each (prune tells a file emptied later from one removed: docs/adopting-and-pruning.md) and its wave.
 */
export async function recordDeclarations(
  store: DeclarationsStore,
  gathered: Pick<Gathered, 'resources' | 'input'>,
): Promise<void> {
  const kept = new Set([...gathered.resources].filter(([, resource]) => resource.keep).map(([key]) => key));
  await store.recordKeep?.(gathered.resources.keys(), kept);
  await store.recordFiles?.(declaringFiles(gathered.resources.values()), gathered.input.applied);
  // The wave of each (docs/rollouts.md): once its manifest is gone, prune deletes it in descending wave order.
  await store.recordWaves?.(
    new Map([...gathered.resources].map(([key, resource]) => [key, waveOf(resource)])),
    gathered.input.applied,
  );
}

function gatherScope(scope: FilesScope): Promise<Gathered> {
  return gatherFrom(scope.files, scope.loaded, scope.live, scope.applied);
}

function isDeclined<D extends CorridorDeclined>(input: PlanInput | D): input is D {
  return 'declined' in input;
}
