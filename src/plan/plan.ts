// plan(): pure function from desired resources and live state to the plan object of docs/contracts.md §3.
import type { Diagnostic } from '../core/diagnostics.js';
import { sortDiagnostics } from '../core/diagnostics.js';
import type {
  AppliedRecord,
  BlockedResource,
  DesiredResource,
  DiscoveryPreview,
  ListedDeployment,
  LiveState,
  Plan,
  PlanChange,
  PlanDiagnostic,
} from '../core/model.js';
import { resourceKey } from '../core/model.js';
import { allKinds, kindOf, liveView, type LiveView, type PlanContext } from '../core/kinds/index.js';
import { adoptionBlocker, adoptReason, ownershipOf, type AdoptPolicy } from '../core/ownership.js';
import type { UnseenFile } from '../core/declared-files.js';
import { pair } from './pairing.js';
import { orphanChanges, type PruneOptions } from './prune.js';
import { partialNote } from './notes.js';
import { sortChanges, summarize } from './summary.js';
import { markWaves } from '../core/waves.js';
import type { PreparedChanges } from './prepared.js';

export interface PlanInput {
  /** Valid resources from manifests (spec.repository already resolved at the edge when possible). */
  resources: DesiredResource[];
  /** Invalid/colliding manifests: planned as blocked, never orphaned. */
  blocked: BlockedResource[];
  /** Copied into plan.diagnostics (without `code`). */
  diagnostics: Diagnostic[];
  /** The live side: every live deployment, and the providers when they were listed (src/observe/live.ts). */
  live: LiveState;
  /** Key resourceKey(kind, name); empty map without Redis. */
  applied: ReadonlyMap<string, AppliedRecord>;
  /** Key resourceKey; secretName -> secretHash(value) of the DESIRED value; a secret missing here could not be resolved. */
  secretHashes: ReadonlyMap<string, Record<string, string>>;
  /** Key resourceKey; messages (no values) of secrets that could not be resolved: the resource is blocked with them. */
  secretErrors?: ReadonlyMap<string, string[]>;
  /** Key provider name; previews for mcp providers. */
  discovery?: ReadonlyMap<string, DiscoveryPreview>;
  /** Key deployment name; unresolved `repository`: blocked with this reason. */
  repositoryErrors?: ReadonlyMap<string, string>;
  /** What the plan could not see (applied state not read, deployments outside name_prefix); copied into plan.notes. */
  notes?: string[];
  /**
   * The applied state was read, so the plan knows which live resources converge owns: a first write to one it does not
   * own is `adopt`. Absent or false (no Redis, --no-applied-state, a plan built from data alone): ownership is unknown,
   * and such writes plan as update (or noop) as before.
   */
  ownershipKnown?: boolean;
  /** adopt setting (default auto): under explicit, taking over a live resource converge did not create needs converge/adopt: "true". */
  adoptPolicy?: AdoptPolicy;
  /** --prune and its guards; absent: prune off. */
  prune?: PruneOptions;
  /**
   * "file:line:column" of the first error of each file of the tree (manifests, vars files, overlays) that fails to load:
   * while any does, what converge applied and no file that loads declares is unknown (blocked), and nothing is deleted.
   */
  unreadable?: readonly string[];
  /**
   * Manifest paths present whose content converge cannot see: files that declare nothing (empty, or only comments) and
   * paths that could not be read (a dangling link, a directory, a FIFO, a file that cannot be opened). What converge
   * applied that such a path declared before (by the applied record's `file`; any of them when it has none) is unknown
   * and not deleted; the other deletes are not held back by it.
   */
  unseenFiles?: readonly UnseenFile[];
  /**
   * --target: the resource keys this partial plan is limited to (set by partialPlanInput, src/plan/partial.ts, which
   * narrows the rest of the input to them); copied into plan.targets, with a note.
   */
  targets?: string[];
}

const NO_HASHES: Record<string, string> = Object.freeze({});

function toPlanDiagnostic(d: Diagnostic): PlanDiagnostic {
  return { severity: d.severity, file: d.file, line: d.line, column: d.column, message: d.message };
}

/** What the input holds about one resource besides its manifest and live state (each kind reads what concerns it). */
function planContext(input: PlanInput, resource: DesiredResource, view: LiveView): PlanContext {
  const key = resourceKey(resource.kind, resource.name);
  const context: PlanContext = { secretHashes: input.secretHashes.get(key) ?? NO_HASHES };
  const applied = input.applied.get(key);
  if (applied) context.applied = applied;
  const secretErrors = input.secretErrors?.get(key);
  if (secretErrors) context.secretErrors = secretErrors;
  const repositoryError = input.repositoryErrors?.get(resource.name);
  if (repositoryError) context.repositoryError = repositoryError;
  const preview = input.discovery?.get(resource.name);
  if (preview) context.discovery = preview;
  return { ...context, ...kindOf(resource.kind).liveContext(resource.name, view) };
}

/**
 * An update of a live deployment converge does not own (no applied record of its id): this first write takes it
 * over: `adopt`; under adopt: explicit without converge/adopt: "true" it is blocked instead. A live deployment that
 * already matches its manifest stays `noop`: nothing is written, so nothing is taken over.
 */
function withOwnership(
  change: PlanChange,
  resource: DesiredResource,
  live: Pick<ListedDeployment, 'id' | 'is_preview'>,
  input: PlanInput,
): PlanChange {
  if (change.action !== 'update' || live.is_preview === true) return change;
  if (ownershipOf(input.applied.get(resourceKey(resource.kind, resource.name)), live.id) === 'owned') return change;
  const blocker = adoptionBlocker(input.adoptPolicy, resource, live);
  const reasons = change.reason ? [change.reason] : [];
  if (blocker) return { ...change, action: 'blocked', new_revision: false, reason: [blocker, ...reasons].join('; ') };
  // A kind whose own reason already says it takes over one created elsewhere (a provider) adds none.
  const why = kindOf(resource.kind).adoptNote ? [adoptReason()] : [];
  return { ...change, action: 'adopt', reason: [...why, ...reasons].join('; ') || null };
}

/**
 * The plan of `input`. `prepared`: changes diffed ahead (src/plan/prepared.ts); one is used only where it is the diff of
 * the same resource against the same live deployment and context, so the plan is the same with or without them.
 */
export function plan(input: PlanInput, prepared?: PreparedChanges): Plan {
  const pairs = pair(input.resources, input.blocked, input.live.deployments);
  const changes: PlanChange[] = [];
  const view = liveView(input.live, pairs.orphans);
  // The resources that declare a wave, by key (the one pass over them: markWaves below reads only these).
  const waved = new Map<string, DesiredResource>();
  for (const { resource, live } of pairs.resources) {
    if (resource.wave !== undefined) waved.set(resourceKey(resource.kind, resource.name), resource);
    const kind = kindOf(resource.kind);
    const context = planContext(input, resource, view);
    const change = prepared?.take(resource, live, context) ?? kind.diff(resource, live, context);
    // The live resource: the listing entry paired by name, else the kind's own live side (a provider of this provider_id).
    const owned = live ?? kind.liveStamp(resource.name, view) ?? undefined;
    changes.push(owned && input.ownershipKnown ? withOwnership(change, resource, owned, input) : change);
  }
  for (const entry of pairs.blocked) {
    changes.push({
      kind: entry.kind,
      name: entry.name,
      action: 'blocked',
      new_revision: false,
      fields: [],
      reason: entry.reasons.join('; '),
    });
  }
  // The applied state knows what converge applied: such an orphan lost its manifest (released), or, owned and with --prune, is deleted.
  // Each kind names its live resources no manifest (valid or blocked) declares.
  const declared = new Set([...input.resources, ...input.blocked].map((r) => resourceKey(r.kind, r.name)));
  const orphans = orphanChanges(
    allKinds().flatMap((kind) => kind.orphans(view, declared)),
    input.applied,
    input.prune,
    input.unreadable,
    input.unseenFiles,
  );
  changes.push(...orphans.changes);
  sortChanges(changes);
  const result: Plan = {
    format_version: '1',
    summary: summarize(changes),
    changes,
    diagnostics: sortDiagnostics(input.diagnostics).map(toPlanDiagnostic),
  };
  const partial = input.targets ? [partialNote(input.targets)] : [];
  const notes = [
    ...partial,
    ...(input.notes ?? []),
    ...(input.live.providers && !input.live.providers.readable ? [input.live.providers.note] : []),
    ...orphans.notes,
  ];
  if (notes.length > 0) result.notes = notes;
  if (input.targets) result.targets = [...input.targets];
  if (orphans.refused) result.prune_refused = orphans.refused;
  const waves =
    waved.size > 0
      ? markWaves(changes, waved, new Set(pairs.resources.map((p) => resourceKey(p.resource.kind, p.resource.name))))
      : undefined;
  if (waves) result.waves = waves;
  return result;
}
