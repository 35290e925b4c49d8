// Starts the load of a whole manifest tree, with the plan's per-resource work on each file as it compiles, without loading the service side.
import type { Environment } from './environment.js';
import type { ListingAhead } from './listing-ahead.js';
import { loadManifestDir, type ManifestCache, type ManifestDirResult } from './manifests.js';
import { PlanAhead } from './plan-ahead.js';

/** What the load of a tree reads, and how (gatherPlanInput's options: src/observe/gather.ts). */
export interface TreeLoadOptions {
  dir: string;
  env: NodeJS.ProcessEnv;
  allowLiteralSecrets: boolean;
  /** Variables files and overlay directories read with `dir` (docs/environments.md). */
  environment?: Environment | undefined;
  /** Parse results of earlier loads of `dir` (a long-lived daemon): files whose bytes did not change are not parsed again. */
  manifestCache?: ManifestCache;
  /**
   * name_prefix: only deployments whose names start with it are listed (the service is asked with
   * name_contains, then the names are filtered by prefix), planned and reported as orphans.
   */
  namePrefix?: string | undefined;
  /** The listing of `dir` begun while the command's modules loaded, with the compile threads it started. */
  ahead?: ListingAhead;
}

/** A tree's load under way: the files' results, and the plan's work on each resource as its file compiled. */
export interface TreeLoad {
  planAhead: PlanAhead;
  /** Rejects as loadManifestDir does (a directory that cannot be read), or with `signal`'s reason once it aborts. */
  loaded: Promise<ManifestDirResult>;
  /**
   * Settles when the files are read and their compile has started (the threads have their first batches), or the load
   * has ended: what the command loads next then runs beside the compile instead of before it.
   */
  compiling: Promise<void>;
}

/**
 * Starts loading the tree. plan starts it before its service client, Redis and the rest load, and loads them once
 * `compiling` settles (src/cli/commands/plan-run.ts), so the threads compile while they load; gatherPlanInput
 * takes it (GatherOptions.started) or starts its own. `signal` stops it on a way out that no longer needs it.
 */
export function startTreeLoad(options: TreeLoadOptions, signal?: AbortSignal): TreeLoad {
  const planAhead = new PlanAhead(options.env, options.namePrefix);
  let compileStarted = (): void => undefined;
  const started = new Promise<void>((resolve) => (compileStarted = resolve));
  const loaded = loadManifestDir(options.dir, {
    allowLiteralSecrets: options.allowLiteralSecrets,
    ...(options.manifestCache ? { cache: options.manifestCache } : {}),
    ...(options.environment ? { environment: options.environment } : {}),
    ...(options.ahead ? { ahead: options.ahead } : {}),
    ...(signal ? { signal } : {}),
    onCompiled: planAhead.compiled,
    onCompiling: () => compileStarted(),
  });
  // Awaited by gatherPlanInput; this handler only keeps a load nobody awaits any more (the command left) from being reported unhandled.
  const ended = loaded.then(
    () => undefined,
    () => undefined,
  );
  return { planAhead, loaded, compiling: Promise.race([started, ended]) };
}
