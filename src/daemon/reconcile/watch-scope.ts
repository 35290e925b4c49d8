// What the next reconcile covers: the files a watch burst changed (a targeted reconcile, src/daemon/cycle/targeted.ts) or the whole directory, and the rows whose state moved since they were decided.
import type { Logger } from 'pino';
import { reconcileDirectory, type ReconcileOutcome } from '../cycle/cycle.js';
import type { CycleContext } from '../cycle/cycle-context.js';
import { reconcileFiles } from '../cycle/targeted.js';
import type { ReconcileTrigger } from '../telemetry/metrics.js';

/**
 * The most files a watch event reconciles one by one (docs/daemon.md, "A watch event reconciles what changed"): each
 * resource costs one read (8 in flight), so 50 files of one resource are about 7 round trips, still well under a full
 * reconcile at 1,000 deployments; a larger change reads the listing once instead.
 */
export const TARGETED_MAX_FILES = 50;

/** The changed paths a watch burst reports (src/daemon/watch/watcher.ts); overflowed: more than it keeps. */
export interface ChangedPaths {
  paths: readonly string[];
  overflow: boolean;
}

/** The changes folded into one run: the paths of watch bursts, or `all` once any request needs the whole directory. */
export type RunScope = Set<string> | 'all';

/** Folds one request into the run's scope: only a watch burst with its paths keeps the run targeted. */
export function foldScope(scope: RunScope | undefined, trigger: ReconcileTrigger, changed?: ChangedPaths): RunScope {
  if (scope === 'all' || trigger !== 'watch' || !changed || changed.overflow) return 'all';
  const paths = scope ?? new Set<string>();
  for (const path of changed.paths) paths.add(path);
  return paths;
}

/**
 * The rows whose state moved since the reconcile that decided them (a job ended, a rollout's health changed, a hold was
 * released): a targeted reconcile decides their files again, since the outcome it keeps for every other row is that
 * earlier decision.
 */
export class WatchScope {
  /** The last reconcile's outcome (full, or a targeted one folded into it); undefined: the next one is full. */
  private last: ReconcileOutcome | undefined;
  private readonly touched = new Set<string>();
  /** The rows touched while the last run ran (its outcome does not know how they moved). */
  private moved = new Set<string>();

  constructor(private readonly log: Logger) {}

  touch(keys: Iterable<string>): void {
    for (const key of keys) this.touched.add(key);
  }

  /** Touches `key` when there is one; whether there was. */
  touchKey(key: string | undefined): boolean {
    if (key !== undefined) this.touched.add(key);
    return key !== undefined;
  }

  /** The files to reconcile one by one, or undefined: the whole directory. */
  private targets(scope: RunScope): string[] | undefined {
    const last = this.last;
    if (scope === 'all' || !last) return undefined;
    const files = new Set(scope);
    for (const key of this.touched) {
      const file = last.resources.get(key)?.location.file;
      if (file === undefined) return undefined;
      files.add(file);
    }
    return files.size <= TARGETED_MAX_FILES ? [...files] : undefined;
  }

  /**
   * Runs one reconcile of `scope`: targeted when it can be, else full. Returns its outcome (undefined and the error
   * thrown when it failed: the next is full) and whether rows moved while it ran outside what it decided (then a
   * targeted reconcile follows at once, so their rows do not keep this run's older decision).
   */
  async run(ctx: CycleContext, scope: RunScope): Promise<{ outcome: ReconcileOutcome; followUp: boolean }> {
    const paths = this.targets(scope);
    const before = new Set(this.touched);
    this.touched.clear();
    try {
      let outcome: ReconcileOutcome | undefined;
      if (paths && this.last) {
        const targeted = await reconcileFiles(ctx, this.last, paths);
        if ('outcome' in targeted) outcome = targeted.outcome;
        else this.log.debug({ files: paths.length, reason: targeted.full }, 'watch event reconciled in full');
      }
      outcome ??= await reconcileDirectory(ctx);
      this.last = outcome;
      this.moved = new Set(this.touched);
      return { outcome, followUp: outcome.targeted !== undefined && this.touched.size > 0 };
    } catch (error) {
      this.last = undefined;
      this.touch(before);
      this.moved = new Set(this.touched);
      throw error;
    }
  }

  /**
   * The run's outcome was folded into the status: the health changes that fold made are its own decisions, not rows
   * that moved since (else a first reconcile, which changes every row's health, would make the next one full).
   */
  folded(): void {
    this.touched.clear();
    for (const key of this.moved) this.touched.add(key);
  }
}
