// What `converge logs NAME` runs (its flags and --help are in logs.ts, loaded without this).
import { LOGS_DEFAULT_LIMIT, LOGS_MAX_LIMIT, LOGS_DEFAULT_POLL_MS } from './values.js';
import { resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseDuration } from '../../core/duration.js';
import { ConvergeError, UsageError } from '../../core/errors.js';
import { formatLogEntry, logTimestamp } from '../../core/log-lines.js';
import type { DesiredResource } from '../../core/model.js';
import { kindOf } from '../../core/kinds/index.js';
import type { LogEntry, LogRequest } from '../../core/wire/schema.js';
import { loadManifestDir } from '../../observe/manifests.js';
import type { LogRead, ServiceClient } from '../../service/client.js';
import type { CommandIo } from '../command.js';
import { maskOf } from '../log-tail.js';
import { resolveSettings } from '../settings.js';
import { openTarget, requireApiUrl } from '../target.js';
import type { ParsedArgs } from '../command.js';

interface LogsRequest {
  deploymentId: string;
  build: boolean;
  revisionId: string | undefined;
}

function limitOf(raw: string | undefined): number {
  if (raw === undefined) return LOGS_DEFAULT_LIMIT;
  const text = String(raw);
  if (!/^\d+$/.test(text) || Number(text) < 1 || Number(text) > LOGS_MAX_LIMIT)
    throw new UsageError(`--limit: "${text}" is not a whole number from 1 to ${LOGS_MAX_LIMIT}`);
  return Number(text);
}

function pollOf(raw: string | undefined): number {
  if (raw === undefined) return LOGS_DEFAULT_POLL_MS;
  const ms = parseDuration(String(raw), '--poll');
  if (ms < 100) throw new UsageError(`--poll: "${String(raw)}" is not a duration of at least 100ms (e.g. 2s)`);
  return ms;
}

/** The manifest's resource of this deployment, when --manifests names a directory: its declared secrets are masked. */
async function declaredResource(
  dir: string | undefined,
  name: string,
  io: CommandIo,
): Promise<DesiredResource | undefined> {
  if (dir === undefined) return undefined;
  const loaded = await loadManifestDir(resolve(io.cwd, dir), { allowLiteralSecrets: true });
  // Build and deploy logs belong to the kinds whose writes start revisions (src/core/kinds: rollout).
  return loaded.resources.find((r) => kindOf(r.kind).rollout && r.name === name);
}

async function read(client: ServiceClient, q: LogsRequest, body: LogRequest): Promise<LogRead> {
  if (q.build) return client.buildLogs(q.deploymentId, q.revisionId!, body);
  return client.deployLogs(q.deploymentId, body, q.revisionId);
}

/** Revision statuses before and during the build (against-the-real-service.md): a build log can still grow. */
const BUILD_PHASES = new Set(['CREATING', 'QUEUED', 'AWAITING_BUILD', 'BUILDING', 'INTERRUPTED', 'UNKNOWN']);

/** Whether following should stop: a build log ends when its revision's build does (or the revision cannot be read). */
async function buildEnded(client: ServiceClient, q: LogsRequest): Promise<boolean> {
  if (!q.build) return false;
  const answer = await client.getRevision(q.deploymentId, q.revisionId!);
  return answer.outcome !== 'found' || !BUILD_PHASES.has(answer.revision.status);
}

/** Prints the newest `limit` lines (oldest first); with follow, then the new lines as they come, until a signal or the build ends. */
async function printLogs(
  client: ServiceClient,
  q: LogsRequest,
  options: { limit: number; follow: boolean; pollMs: number; mask: string[]; signal: AbortSignal },
  io: CommandIo,
): Promise<number> {
  const first = await read(client, q, { order: 'desc', limit: options.limit });
  if (first.outcome === 'no-endpoint') {
    io.stderr.write(
      `converge logs: the service has no ${q.build ? 'build' : 'deploy'} log endpoint (it answered ${first.status}); nothing to show\n`,
    );
    return 0;
  }
  if (first.outcome === 'gone')
    throw new ConvergeError(
      'E_NOT_FOUND',
      `the service has no ${q.revisionId ? `revision ${q.revisionId} of ` : ''}deployment ${q.deploymentId}`,
    );
  const seen = new Set<string>();
  let newest: LogEntry['timestamp'];
  const show = (entries: readonly LogEntry[]): void => {
    for (const entry of entries) {
      const id = entry.id == null ? undefined : String(entry.id);
      if (id !== undefined && seen.has(id)) continue;
      if (id !== undefined) seen.add(id);
      newest = entry.timestamp ?? newest;
      io.stdout.write(`${formatLogEntry(entry, options.mask)}\n`);
    }
  };
  show([...first.page.logs].reverse());
  if (!options.follow) {
    if (first.page.logs.length === 0) io.stderr.write('converge logs: no log lines\n');
    return 0;
  }
  while (!options.signal.aborted) {
    const ended = await buildEnded(client, q);
    const since =
      typeof newest === 'number'
        ? new Date(newest).toISOString()
        : typeof newest === 'string'
          ? logTimestamp(newest)
          : undefined;
    const next = await read(client, q, {
      order: 'asc',
      limit: LOGS_MAX_LIMIT,
      ...(since ? { start_time: since } : {}),
    });
    if (next.outcome === 'found') show(next.page.logs);
    if (ended) return 0;
    await sleep(options.pollMs, undefined, { signal: options.signal }).catch(() => undefined);
  }
  return 0;
}

/** A signal aborted on the first SIGINT or SIGTERM (--follow stops cleanly), and the function removing the handlers. */
function stopSignal(): { signal: AbortSignal; release(): void } {
  const controller = new AbortController();
  const onSignal = (): void => controller.abort();
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  return {
    signal: controller.signal,
    release: () => {
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onSignal);
    },
  };
}

/** How many names that contain the one asked for are offered, at most. */
const SIMILAR_NAMES = 3;

/**
 * No deployment of that name: the names the service listed that contain it (one query, already made), else where
 * names are listed: no command lists every deployment, so the plan's orphan list (live, in no manifest) and the
 * manifests (the declared ones) are named.
 */
function notFoundMessage(name: string, containing: readonly string[]): string {
  const head = `the service has no deployment named "${name}"`;
  if (containing.length > 0) {
    const shown = [...containing]
      .sort()
      .slice(0, SIMILAR_NAMES)
      .map((n) => `"${n}"`);
    const more =
      containing.length > SIMILAR_NAMES
        ? ` (and ${containing.length - SIMILAR_NAMES} more whose names contain "${name}")`
        : '';
    return `${head}; did you mean ${shown.length === 1 ? shown[0] : `one of ${shown.join(', ')}`}${more}?`;
  }
  return `${head}; a deployment is named by its metadata.name: converge plan DIR --show-orphans lists the live deployments no manifest in DIR declares, and the manifests name the rest`;
}

/** Runs `converge logs NAME`; returns the exit code. */
export async function runLogsCommand(args: ParsedArgs, io: CommandIo): Promise<number> {
  if (args.values.build === true && args.values.deploy === true)
    throw new UsageError('give --build or --deploy, not both');
  const name = args.positionals[0]!;
  const limit = limitOf(args.values.limit as string | undefined);
  const pollMs = pollOf(args.values.poll as string | undefined);
  const settings = requireApiUrl(await resolveSettings(args, io.env));
  const resource = await declaredResource(args.values.manifests as string | undefined, name, io);
  const target = await openTarget(settings);
  const stop = stopSignal();
  try {
    const listed = await target.client.listDeployments({ name_contains: name });
    const found = listed.find((d) => d.name === name);
    if (!found)
      throw new ConvergeError(
        'E_NOT_FOUND',
        notFoundMessage(
          name,
          listed.map((d) => d.name),
        ),
      );
    const build = args.values.build === true;
    const revisionId =
      (args.values.revision as string | undefined) ?? (build ? (found.latest_revision_id ?? undefined) : undefined);
    if (build && !revisionId)
      throw new ConvergeError('E_NOT_FOUND', `deployment "${name}" has no revision yet: there is no build log`);
    if (build) io.stderr.write(`converge logs: build log of revision ${revisionId}\n`);
    const q = { deploymentId: found.id, build, revisionId };
    return await printLogs(
      target.client,
      q,
      { limit, follow: args.values.follow === true, pollMs, mask: maskOf(resource, io.env), signal: stop.signal },
      io,
    );
  } finally {
    stop.release();
    await target.close();
  }
}
