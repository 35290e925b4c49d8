// Build and deploy logs of emulated revisions (pure): the lines each phase prints, when, and the service's paging.
import type { StoredDeployment, StoredRevision } from './records.js';

export const LOG_LEVELS = ['DEBUG', 'INFO', 'WARNING', 'ERROR', 'CRITICAL'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

/** One log line as the service answers it (against-the-real-service.md): timestamp in ms since the epoch. */
export interface LogEntry {
  id: string;
  timestamp: number;
  level: LogLevel;
  message: string;
}

/** The options of a log request, parsed: limit, order, the cursor, and the filters. */
export interface LogQuery {
  limit: number;
  order: 'asc' | 'desc';
  /** How many matching entries in this order were served before (the previous answer's next_offset). */
  offset: number;
  level?: LogLevel;
  query?: string;
  startTime?: number;
  endTime?: number;
}

export interface LogPage {
  logs: LogEntry[];
  /**
   * Pass back as `offset` (same order and filters) for the entries after this page; at the end it points past the last
   * entry, so an `asc` reader polling with it gets only lines printed since (as the official tool's streaming does).
   */
  next_offset: string;
}

/** What the log generator reads besides the records: the time, and --build-log-secrets. */
export interface LogContext {
  now: number;
  /** Build logs print the deployment's environment (NAME=value), as a build that dumps it does. */
  printSecrets: boolean;
}

type Line = [LogLevel, string];

/** When the build phase ends: two thirds of the build time (records.ts: QUEUED, BUILDING, then DEPLOYING). */
function buildEnd(r: StoredRevision): number {
  return r.build_started_at + Math.floor((2 * r.build_ms) / 3);
}

/** A stored field as text, or `fallback` when it is not a string (absent, null). */
function textOr(value: unknown, fallback: string): string {
  return typeof value === 'string' ? value : fallback;
}

function sourceLines(d: StoredDeployment, r: StoredRevision): Line[] {
  const config = r.source_revision_config;
  const source = r.revision_source ?? d.source;
  const lines: Line[] = [];
  if (source === 'codehost')
    lines.push([
      'INFO',
      `Cloning ${textOr(d.source_config.repo_url, '(repository)')} at ${textOr(config.repo_ref, 'the default branch')}`,
    ]);
  else if (source === 'internal_source')
    lines.push(['INFO', `Downloading source tarball ${textOr(config.source_tarball_path, '(none)')}`]);
  else lines.push(['INFO', `Using image ${textOr(config.image_uri, '(none)')}`]);
  if (typeof config.graph_config_path === 'string')
    lines.push(['INFO', `Reading graph configuration ${config.graph_config_path}`]);
  return lines;
}

function buildLines(d: StoredDeployment, r: StoredRevision, ctx: LogContext): Line[] {
  const install = r.install_command ?? 'pip install -e .';
  const lines: Line[] = [['INFO', `Build of revision ${r.id} started`], ...sourceLines(d, r)];
  if (r.failure === 'tarball-missing') {
    const path = String(r.source_revision_config.source_tarball_path);
    return [
      ...lines,
      ['ERROR', `Source tarball ${path} not found: nothing was uploaded to its upload_url`],
      ['ERROR', 'Build failed: there is no source to build (upload the tarball, then PATCH its object_path again)'],
    ];
  }
  if (r.tracked_packages && r.tracked_packages.length > 0)
    lines.push(['INFO', `Tracked packages: ${r.tracked_packages.join(', ')}`]);
  if (ctx.printSecrets)
    for (const s of d.secrets) if (s.value !== undefined) lines.push(['DEBUG', `Environment: ${s.name}=${s.value}`]);
  lines.push(['INFO', `Installing dependencies: ${install}`]);
  if (r.failure === 'build') {
    return [
      ...lines,
      [
        'ERROR',
        'ERROR: Could not find a version that satisfies the requirement acme-internal-sdk>=2.0 (emulated failure: --build-fail matches this deployment)',
      ],
      ['ERROR', `Build failed: "${install}" exited with status 1`],
    ];
  }
  if (r.build_command) lines.push(['INFO', `Running build command: ${r.build_command}`]);
  return [...lines, ['INFO', 'Build complete; image pushed']];
}

function deployLines(r: StoredRevision): Line[] {
  const lines: Line[] = [
    ['INFO', `Deploying revision ${r.id}`],
    ['INFO', 'Starting server'],
  ];
  if (r.failure === 'deploy') {
    return [
      ...lines,
      [
        'ERROR',
        'Container exited with status 1 during startup (emulated failure: --deploy-fail matches this deployment)',
      ],
      ['ERROR', 'Deploy failed: the server never became healthy'],
    ];
  }
  if (r.outcome === 'SKIPPED') return [...lines, ['WARNING', 'Superseded by a newer revision']];
  return [...lines, ['INFO', 'Application startup complete'], ['INFO', 'Server listening on port 8000']];
}

/** Spreads lines over [from, to] and keeps those already printed at `now` (and not after the revision ended). */
function timed(lines: Line[], prefix: string, from: number, to: number, r: StoredRevision, now: number): LogEntry[] {
  const span = Math.max(0, to - from);
  const out: LogEntry[] = [];
  lines.forEach(([level, message], index) => {
    const timestamp = from + (lines.length > 1 ? Math.round((index * span) / (lines.length - 1)) : 0);
    if (timestamp > now || timestamp > r.ends_at) return;
    out.push({ id: `${prefix}-${index}`, timestamp, level, message });
  });
  return out;
}

/** The build log of a revision as of `ctx.now`, oldest first. */
export function buildLog(d: StoredDeployment, r: StoredRevision, ctx: LogContext): LogEntry[] {
  return timed(buildLines(d, r, ctx), `${r.id}-build`, r.build_started_at, buildEnd(r), r, ctx.now);
}

/** The deploy (runtime) log of a revision as of `ctx.now`, oldest first; empty for a build that failed. */
export function deployLog(r: StoredRevision, now: number): LogEntry[] {
  if (r.failure === 'build' || r.failure === 'tarball-missing' || r.outcome === 'BUILD_FAILED') return [];
  return timed(deployLines(r), `${r.id}-deploy`, buildEnd(r), Math.max(buildEnd(r), r.ends_at), r, now);
}

/** The deploy log of every revision of a deployment, oldest first. */
export function deploymentDeployLog(d: StoredDeployment, now: number): LogEntry[] {
  return d.revisions.flatMap((r) => deployLog(r, now)).sort((a, b) => a.timestamp - b.timestamp);
}

/** One page of `entries` (oldest first) under the query's filters, order, cursor and limit. */
export function pageLogs(entries: readonly LogEntry[], q: LogQuery): LogPage {
  const needle = q.query?.toLowerCase();
  const matching = entries.filter(
    (e) =>
      (q.level === undefined || e.level === q.level) &&
      (needle === undefined || e.message.toLowerCase().includes(needle)) &&
      (q.startTime === undefined || e.timestamp >= q.startTime) &&
      (q.endTime === undefined || e.timestamp <= q.endTime),
  );
  const ordered = q.order === 'asc' ? matching : [...matching].reverse();
  const page = ordered.slice(q.offset, q.offset + q.limit);
  return { logs: page, next_offset: String(q.offset + page.length) };
}
