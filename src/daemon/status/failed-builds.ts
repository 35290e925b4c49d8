// The build log tails of failed revisions the daemon keeps: logged once when a revision fails, shown by /status and in notifications.
import type { Logger } from 'pino';
import { revisionFailed } from '../../core/health.js';
import type { DesiredResource } from '../../core/model.js';
import type { ResourceState } from '../../core/resource-state-model.js';
import { resolveDesiredSecrets } from '../../secrets/resolve.js';
import { buildLogTail, type BuildLogReads, type BuildLogTail } from '../../service/build-log-tail.js';
import type { EventLogStore, StoredBuildLog } from '../../store/event-log.js';
import type { ResourceTracker } from './resource-tracker.js';

/** A failed revision of one resource's deployment. */
export interface FailedRevision {
  key: string;
  deploymentId: string;
  revisionId: string;
}

/** Per resource, the build log tail of its last failed revision; every declared secret value masked before it is kept. */
export class FailedBuilds {
  private readonly tails = new Map<string, { revisionId: string } & BuildLogTail>();

  constructor(
    private readonly tracker: ResourceTracker,
    private readonly log: Logger,
    /** The desired resources of the last reconcile that loaded (whose secret values are masked), and their environment. */
    private readonly secrets: () => { desired: ReadonlyMap<string, DesiredResource>; env: NodeJS.ProcessEnv },
    /** Where the tails are kept across restarts and failover and read by /status on every replica, when recorded. */
    private readonly store?: Pick<EventLogStore, 'setBuildLog' | 'buildLogs'>,
  ) {}

  /** Takes up the tails the last leader kept (src/store/event-log.ts). */
  restore(tails: ReadonlyMap<string, StoredBuildLog>): void {
    for (const [key, tail] of tails) this.tails.set(key, tail);
  }

  /** Why a revision failed, in the daemon's log: its build log's last lines, kept for /status and notifications. */
  async logTail(client: BuildLogReads, failed: FailedRevision): Promise<void> {
    const { desired, env } = this.secrets();
    const resource = desired.get(failed.key);
    const mask = resource ? Object.values(resolveDesiredSecrets(resource, env).values) : [];
    const tail = await buildLogTail(client, { id: failed.deploymentId }, failed.revisionId, mask);
    this.tails.set(failed.key, { revisionId: failed.revisionId, ...tail });
    await this.store
      ?.setBuildLog(failed.key, { revisionId: failed.revisionId, ...tail })
      .catch((error: unknown) =>
        this.log.warn(
          { key: failed.key, error: (error as Error).message.split('\n')[0] },
          'could not keep the build log tail in Redis (shown until this daemon stops)',
        ),
      );
    if (tail.lines.length > 0)
      this.log.warn(
        { key: failed.key, revision: failed.revisionId, lines: tail.lines },
        'build log of the failed revision (last lines)',
      );
    else if (tail.note)
      this.log.info(
        { key: failed.key, revision: failed.revisionId, note: tail.note },
        'no build log of the failed revision',
      );
  }

  /**
   * The last build log lines of a failed revision, for a notification: the ones logged, else read now (once: they are
   * kept). Undefined when no resource has that deployment or nothing was read.
   */
  async lines(client: BuildLogReads, deploymentId: string, revisionId: string): Promise<string[] | undefined> {
    const row = this.tracker.resources().find((r) => r.deploymentId === deploymentId);
    if (!row) return undefined;
    if (this.tails.get(row.key)?.revisionId !== revisionId)
      await this.logTail(client, { key: row.key, deploymentId, revisionId });
    const kept = this.tails.get(row.key);
    return kept && kept.lines.length > 0 ? kept.lines : undefined;
  }

  /**
   * Reads the tail of each failed revision of `rows` that no tail is kept of: a failure this daemon did not see happen
   * (`converge apply`'s, a former leader's that died before it read the log). At most `limit` reads a call; returns
   * how many. Each is read once: a tail is kept even when it holds only a note.
   */
  async fetchMissing(client: BuildLogReads, rows: readonly ResourceState[], limit = 10): Promise<number> {
    let reads = 0;
    for (const row of rows) {
      if (reads >= limit) break;
      const { health, deploymentId } = row;
      const failed = health.status === 'degraded' && revisionFailed(health.revisionStatus ?? '');
      if (!failed || !health.revisionId || !deploymentId) continue;
      if (this.tails.get(row.key)?.revisionId === health.revisionId) continue;
      reads += 1;
      await this.logTail(client, { key: row.key, deploymentId, revisionId: health.revisionId });
    }
    return reads;
  }

  /**
   * For /status: the build log tail of each of `rows` whose latest revision failed (while that revision stays its
   * health), as kept in Redis, so that every replica shows the leader's; this replica's own when Redis does not answer.
   */
  async shown(rows: readonly ResourceState[]): Promise<Record<string, StoredBuildLog>> {
    const kept = await this.store?.buildLogs().catch(() => undefined);
    const tails: ReadonlyMap<string, StoredBuildLog> = kept ?? this.tails;
    const out: Record<string, StoredBuildLog> = {};
    for (const row of rows) {
      const kept = tails.get(row.key);
      if (kept && row.health.status === 'degraded' && row.health.revisionId === kept.revisionId) out[row.key] = kept;
    }
    return out;
  }
}
