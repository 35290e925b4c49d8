// The daemon's terms as leader, one at a time: the watcher, the first reconcile, then the resync scheduler.
import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from 'pino';
import type { Jobs } from '../../jobs/open-jobs.js';
import type { Environment } from '../../observe/environment.js';
import type { Resync } from '../../jobs/queue/resync-scheduler.js';
import type { DaemonSettings } from '../daemon-options.js';
import { watchEnvironment } from '../watch/environment-watcher.js';
import type { Reconciler } from '../reconcile/reconciler.js';
import { errorLine } from '../reconcile/run-record.js';
import type { ManifestWatcher } from '../watch/watcher.js';
import { within } from '../within.js';

const MAX_CYCLES_KEPT = 200;

/**
 * How long a term's end waits for the resync worker to close (the cycle it runs ends first) before it drops that
 * worker's connection: BullMQ's close can wait for ever after a Redis restart, and the next term starts only after.
 */
const RESYNC_CLOSE_MS = 5_000;

/** What a term uses of the daemon. */
export interface TermParts {
  dir: string;
  environment: Environment | undefined;
  settings: Pick<DaemonSettings, 'debounce' | 'driftPolicy' | 'resync'>;
  reconciler: Reconciler;
  jobs: Jobs;
  log: Logger;
  warn: (source: string, error: unknown) => void;
  /** Aborted when the daemon stops. */
  stopSignal: AbortSignal;
  /** Whether the daemon is stopping (the scheduler's start is not retried then). */
  stopping: () => boolean;
}

/**
 * The current term as leader: the watcher, the first reconcile, then the resync scheduler (started in the
 * background); ended (aborted, then each part stopped) when the lease is lost or the daemon stops.
 */
export class LeaderTerms {
  /** The resync cycles this daemon ran (the newest MAX_CYCLES_KEPT), for /status. */
  readonly cycles: string[] = [];
  private readonly parts: TermParts;
  private term: { abort: AbortController; run: Promise<void> } | undefined;
  private watcher: ManifestWatcher | undefined;
  private resync: Resync | undefined;

  constructor(parts: TermParts) {
    this.parts = parts;
  }

  /** Whether a term is on (this replica leads). */
  get active(): boolean {
    return this.term !== undefined;
  }

  /** Starts a new term in the background (end the one before first). */
  begin(): void {
    const abort = new AbortController();
    this.term = { abort, run: this.run(abort.signal) };
  }

  /** Ends the current term: no new step starts, then the watcher and the resync scheduler close. */
  async end(): Promise<void> {
    const term = this.term;
    if (!term) return;
    this.term = undefined;
    term.abort.abort();
    await term.run;
    await this.stopWatcher();
    this.watcher = undefined;
    const resync = this.resync;
    this.resync = undefined;
    if (!resync) return;
    const closing = resync.close().catch((e: unknown) => this.parts.warn('resync', e));
    // While the daemon stops, the stop's own bounds govern (the work window, then every connection dropped at the
    // end): dropping this one here, with Redis frozen and writes in flight, left the stop hanging past all of its
    // bounds (docs/shutdown-and-leadership.md).
    if (this.parts.stopping()) return void (await closing);
    const closed = await within(closing, RESYNC_CLOSE_MS);
    if (closed.done) return;
    this.parts.log.warn(
      { boundMs: RESYNC_CLOSE_MS },
      'the resync worker did not close in time (Redis restarted or away); its connection is dropped so the next term can start',
    );
    resync.disconnect();
  }

  async stopWatcher(): Promise<void> {
    await this.watcher?.close().catch((e: unknown) => this.parts.warn('watcher', e));
  }

  private async startWatcher(): Promise<void> {
    const { settings, log, reconciler, environment, dir } = this.parts;
    this.watcher = await watchEnvironment({
      dir,
      environment,
      debounceMs: settings.debounce,
      onBurst: (burst) => {
        log.debug(
          { events: burst.events, sample: burst.sample, quietMs: Date.now() - burst.lastAt },
          'manifest change',
        );
        // The changed paths of the manifest directory (a targeted reconcile); an overlay or variables file changes every resource.
        void reconciler.request('watch', undefined, environment ? undefined : burst);
      },
      onError: (e) => this.parts.warn('watcher', e),
      // The loader reports the loop as a manifest warning (E_SYMLINK_LOOP); the watcher only says it did not follow it.
      onSkippedLink: (link, target) =>
        log.debug(
          { link, target },
          'symbolic link not followed by the watcher: it leads out of the tree or to a folder already watched',
        ),
    });
    const inputs = environment
      ? { vars: environment.vars.map((v) => v.label), overlays: environment.overlays.map((o) => o.label) }
      : {};
    log.info(
      {
        dir,
        ...inputs,
        watched: this.watcher.watchedCount(),
        driftPolicy: settings.driftPolicy,
        resyncMs: settings.resync,
        debounceMs: settings.debounce,
      },
      'watching the manifest directory',
    );
  }

  /**
   * One term as leader, in the background (a big directory or a slow service must not delay stop()): the watcher,
   * the first reconcile, then the resync scheduler, so the first cycle does not repeat it. Redis may be away right
   * now: the scheduler's start is retried with backoff (file changes still reconcile meanwhile).
   */
  private async run(ended: AbortSignal): Promise<void> {
    const { reconciler, jobs, settings, log } = this.parts;
    try {
      await this.startWatcher();
      if (ended.aborted) return;
      await reconciler.request('startup');
      for (let attempt = 1; !this.parts.stopping() && !ended.aborted; attempt++) {
        try {
          this.resync = await jobs.startResync({
            everyMs: settings.resync,
            run: async (cycle) => {
              this.cycles.push(cycle);
              if (this.cycles.length > MAX_CYCLES_KEPT) this.cycles.splice(0, this.cycles.length - MAX_CYCLES_KEPT);
              // Never read the directory in the middle of an edit burst: wait until the watcher has reported it.
              await this.watcher?.quiet();
              await reconciler.request('resync', cycle);
            },
          });
          break;
        } catch (error) {
          const waitMs = Math.min(30_000, 1_000 * 2 ** Math.min(attempt - 1, 5));
          log.warn({ error: errorLine(error), attempt, retryInMs: waitMs }, 'resync scheduler did not start; retrying');
          await sleep(waitMs, undefined, { signal: AbortSignal.any([this.parts.stopSignal, ended]) }).catch(
            () => undefined,
          );
        }
      }
    } catch (error) {
      this.parts.warn('resync', error);
    }
  }
}
