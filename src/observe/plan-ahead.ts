// Each resource's share of a plan, worked out as its manifest file's compile finishes while the other files compile.
import { desiredFingerprint } from '../core/drift.js';
import { inListing, kindOf, liveView, type LiveView, type PlanContext } from '../core/kinds/index.js';
import type { ManifestResult } from '../core/manifest/parse.js';
import { resourceKey, type AppliedRecord, type DesiredResource, type ListedDeployment } from '../core/model.js';
import { PreparedChanges } from '../plan/prepared.js';
import { hashDesiredSecrets } from '../secrets/resolve.js';

/** What hashDesiredSecrets gives for one resource. */
export type HashedSecrets = ReturnType<typeof hashDesiredSecrets>;

/** Diffing what compiled before the live side was read yields to the event loop after about this long. */
const SLICE_MS = 5;

/** The live side a diff reads: the view of the listing, each name's one deployment (null: several), the applied records. */
interface LiveRead {
  view: LiveView;
  byName: Map<string, ListedDeployment | null>;
  applied: ReadonlyMap<string, AppliedRecord>;
}

/**
 * The plan's per-resource work started while the manifests still compile (docs/performance.md, "Plan and validate
 * against the floor on 2 cores"): as each file's first pass arrives (src/observe/manifests.ts `onCompiled`), its
 * resources' secrets are hashed and, for the kinds the deployment listing holds, their fingerprints taken
 * (src/core/kinds/kind.ts keeps them for the decision) and, once the live deployments and applied records are read,
 * their changes diffed (src/plan/prepared.ts). gatherFrom and plan() use what fits the input they end with, and do the
 * rest themselves.
 */
export class PlanAhead {
  readonly changes = new PreparedChanges();
  private readonly hashes = new Map<DesiredResource, HashedSecrets>();
  /** Resources compiled before the live side was read, to diff once it is. */
  private waiting: DesiredResource[] = [];
  private live: LiveRead | undefined;
  private stopped = false;

  /** `namePrefix`: a listed resource outside it is neither listed nor planned (gatherFrom), so nothing is done for it. */
  constructor(
    private readonly env: NodeJS.ProcessEnv,
    private readonly namePrefix: string | undefined,
  ) {}

  /**
   * One file's first pass compiled: its resources' secrets hashed and fingerprints taken; diffed now or once the live
   * side is read. Called from the compile's message handler, so it never throws: a resource whose work fails here is
   * left to gatherFrom and plan(), which do it again on their own path (and report what fails there).
   */
  readonly compiled = (result: ManifestResult): void => {
    if (this.stopped) return;
    for (const resource of result.resources) {
      try {
        this.prepare(resource);
      } catch {
        this.hashes.delete(resource);
      }
    }
  };

  /** The live deployments and applied records read: what compiled so far is diffed, a few milliseconds at a time. */
  async liveRead(deployments: ListedDeployment[], applied: ReadonlyMap<string, AppliedRecord>): Promise<void> {
    const live: LiveRead = { view: liveView({ deployments }), byName: oneByName(deployments), applied };
    this.live = live;
    let slice = performance.now();
    while (!this.stopped && this.waiting.length > 0) {
      this.diff(this.waiting.pop()!, live);
      if (performance.now() - slice > SLICE_MS) {
        await new Promise<void>((resolve) => setImmediate(resolve));
        slice = performance.now();
      }
    }
  }

  /** The secrets of `resource` (this very object) as hashed when its file compiled; undefined when they were not. */
  hashed(resource: DesiredResource): HashedSecrets | undefined {
    return this.hashes.get(resource);
  }

  /** Gathering is over: nothing more is prepared (plan() diffs whatever was not). */
  stop(): void {
    this.stopped = true;
    this.waiting = [];
  }

  /** Hashes the secrets of `resource`, takes its fingerprint (a listed kind), and diffs it now or once the live side is read. */
  private prepare(resource: DesiredResource): void {
    const listed = inListing(resource.kind);
    if (listed && this.namePrefix !== undefined && !resource.name.startsWith(this.namePrefix)) return;
    const hashed = hashDesiredSecrets(resource, this.env);
    this.hashes.set(resource, hashed);
    if (!listed) return;
    desiredFingerprint(resource, hashed.hashes);
    if (this.live) this.diff(resource, this.live);
    else this.waiting.push(resource);
  }

  /**
   * The change of `resource` against the live deployment of its name, with the context plan() gives it in the common
   * case; none when the diff fails (plan() diffs it again, and reports what fails).
   */
  private diff(resource: DesiredResource, live: LiveRead): void {
    const hashed = this.hashes.get(resource)!;
    const deployment = live.byName.get(resource.name);
    // A secret not resolved (plan blocks the resource, with its reasons in the context) or a name listed twice: plan()'s.
    if (hashed.errors.length > 0 || deployment === null) return;
    const applied = live.applied.get(resourceKey(resource.kind, resource.name));
    try {
      const context: PlanContext = {
        secretHashes: hashed.hashes,
        ...(applied ? { applied } : {}),
        ...kindOf(resource.kind).liveContext(resource.name, live.view),
      };
      this.changes.prepare(resource, deployment, context);
    } catch {
      return;
    }
  }
}

/** Each name's live deployment; null for a name listed with more than one id (pairing blocks it: src/plan/pairing.ts). */
function oneByName(deployments: readonly ListedDeployment[]): Map<string, ListedDeployment | null> {
  const byName = new Map<string, ListedDeployment | null>();
  for (const deployment of deployments) {
    const found = byName.get(deployment.name);
    if (found === undefined) byName.set(deployment.name, deployment);
    else if (found !== null && found.id !== deployment.id) byName.set(deployment.name, null);
  }
  return byName;
}
