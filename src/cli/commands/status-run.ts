// What `converge status` runs (its flags and --help are in status.ts, loaded without this).
import { STATUS_FORMATS } from './values.js';
import { ConvergeError, UsageError } from '../../core/errors.js';
import { versionLabel } from '../../core/manifest-version.js';
import { decodeStatus } from '../../core/status-compact.js';
import { resolveSettings } from '../settings.js';
import { daemonBaseUrl } from '../daemon-url.js';
import { WEBHOOK_TOKEN_ENV } from '../../daemon/server/webhook-token.js';
import type { CommandIo, ParsedArgs } from '../command.js';

const TIMEOUT_MS = 5_000;

interface ResourceRow {
  key: string;
  kind: string;
  name: string;
  state: string;
  sync?: { status: string; reason: string; message: string };
  health?: { status: string; reason: string; message: string };
  hold?: { reason: string; message: string };
  action: string;
  error: string | null;
  reason: string | null;
  heldAtLastGood?: boolean;
  drift?: { policy: string; fields: string[]; reason?: string } | null;
  job?: { state: string; outcome?: string } | null;
  syncReason?: string;
  appliedFrom?: { kind: string; id: string; uncommitted?: boolean; appliedAt?: string };
}

interface StatusDocument {
  lease?: {
    replica: string;
    leading: boolean;
    leader: { holder: string; token: number; since: string } | null;
    leaseMs: number;
  } | null;
  appliedState?: { lost: boolean; lostAt: string | null; detail: string | null };
  secretsUnknown?: string[];
  held?: string[];
  health?: Record<string, number>;
  /** Resources by sync status, counted from the same rows as `resources` (daemons before it: absent). */
  sync?: Record<string, number>;
  conflicts?: string[];
  /** Resources whose delete waits (prune_grace, or a person under prune_mode confirm). */
  deletesPending?: string[];
  pruneRefused?: string | null;
  /** The change windows now (null: none configured); `message` says which holds the writes and until when. */
  window?: { blocked: boolean; message: string | null; nextChange: string | null } | null;
  manifestVersion?: { kind: string; id: string; uncommitted?: boolean; readAt?: string } | null;
  daemon?: {
    dir?: string;
    pid?: number;
    hostname?: string;
    startedAt?: string;
    service?: string | null;
    driftPolicy?: string;
    stopping?: boolean;
    reconcileEndpoint?: boolean;
  };
  lastReconcile?: {
    id: number;
    trigger: string;
    finishedAt: string;
    durationMs: number;
    ok: boolean;
    error: string | null;
    summary: Record<string, number> | null;
    enqueued: number;
    drifted: number;
    held: number;
  } | null;
  lastSuccessfulReconcileAt?: string | null;
  reconciles?: { total: number; failed: number } | null;
  counts?: Record<string, Record<string, number>>;
  resources?: ResourceRow[];
  orphans?: string[];
  /** Per resource whose latest revision failed: the last lines of its build log (secret values masked by the daemon). */
  failedBuildLogs?: Record<string, { revisionId: string; lines: string[]; note?: string }>;
  plan?: {
    diagnostics?: Array<{ severity: string; file: string; line: number; column: number; message: string }>;
  } | null;
}

interface Readiness {
  ready: boolean;
  checks: Array<{ name: string; ok: boolean; detail?: string }>;
}

async function getJson(url: string): Promise<{ status: number; body: unknown }> {
  let response: Response;
  try {
    response = await fetch(url, { signal: AbortSignal.timeout(TIMEOUT_MS), headers: { accept: 'application/json' } });
  } catch (error) {
    const cause = (error as { cause?: { code?: string } }).cause?.code ?? (error as Error).name;
    throw new ConvergeError(
      'E_STATUS',
      `no converge daemon answers at ${new URL(url).origin} (${cause}); is "converge run" running there? pass --url http://HOST:PORT`,
      { cause: error },
    );
  }
  const text = await response.text();
  try {
    return { status: response.status, body: JSON.parse(text) };
  } catch {
    throw new ConvergeError(
      'E_STATUS',
      `${url} answered ${response.status} with something that is not JSON; is that a converge daemon?`,
    );
  }
}

function pad(rows: string[][]): string[] {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => (r[i] ?? '').length)));
  return rows.map((r) =>
    r
      .map((cell, i) => (i === r.length - 1 ? cell : cell.padEnd(widths[i]!)))
      .join('  ')
      .trimEnd(),
  );
}

/** "3f2a9c1" for a commit, "content 1a2b3c4d5e6f" for a directory outside git (as src/core/manifest-version.ts shows it). */
/** A version as /status gives it (kind, id, and uncommitted when edits not committed were read), by its one label. */
function versionText(version: { kind: string; id: string; uncommitted?: boolean }): string {
  return versionLabel({ ...version, kind: version.kind === 'git' ? 'git' : 'content' });
}

/** The NOTE column: what the row says, then which manifests converge last wrote it from. */
function note(row: ResourceRow): string {
  const text = noteText(row);
  if (!row.appliedFrom) return text;
  const from = `applied from ${versionText(row.appliedFrom)}`;
  return text ? `${text} (${from})` : from;
}

function noteText(row: ResourceRow): string {
  if (row.error) return row.error;
  if (row.syncReason === 'Conflict' && row.reason) return row.reason;
  if (row.hold) return row.hold.message;
  if (row.health?.status === 'degraded') return row.health.message;
  if (row.drift)
    return `drift (${row.drift.policy}): ${row.drift.fields.join(', ')}${row.drift.reason ? `; ${row.drift.reason}` : ''}`;
  if (row.job && row.job.state !== 'completed') return `job ${row.job.state}`;
  if (row.job?.outcome) return `job ${row.job.outcome}`;
  return row.reason ?? '';
}

/** "1 job", "2 jobs": a count and its noun in agreement. */
export function counted(n: number, noun: string): string {
  return `${n} ${noun}${n === 1 ? '' : 's'}`;
}

/** The text form of a daemon's status. */
function renderStatus(url: string, doc: StatusDocument, ready: Readiness): string {
  const lines = [...daemonLines(url, doc, ready), ...reconcileLines(doc), ...resourceLines(doc), ...findingLines(doc)];
  return lines.join('\n') + '\n';
}

/** The daemon's own state: readiness, the lease, what blocks or holds writes, the manifests it read. */
function daemonLines(url: string, doc: StatusDocument, ready: Readiness): string[] {
  const lines: string[] = [];
  const d = doc.daemon ?? {};
  lines.push(
    `converge daemon at ${url}: ${d.stopping ? 'stopping' : ready.ready ? 'ready' : 'NOT ready'} (dir ${d.dir ?? '?'}, pid ${d.pid ?? '?'} on ${d.hostname ?? '?'}, since ${d.startedAt ?? '?'})`,
  );
  for (const check of ready.checks)
    if (!check.ok) lines.push(`  not ready: ${check.name}: ${check.detail ?? 'failing'}`);
  const lease = doc.lease;
  if (lease) {
    const leader = lease.leader
      ? `${lease.leader.holder} since ${lease.leader.since} (fencing token ${lease.leader.token})`
      : 'none at the last look';
    lines.push(
      `Replica ${lease.replica}: ${lease.leading ? 'LEADER (watches, plans, enqueues; runs jobs)' : 'standby (runs jobs only)'}; leader: ${leader}`,
    );
  }
  if (doc.appliedState?.lost)
    lines.push(
      `Redis lost converge's applied state at ${doc.appliedState.lostAt ?? '?'} (${doc.appliedState.detail ?? 'epoch changed'}); secrets it cannot compare are held, not rewritten.`,
    );
  if (doc.secretsUnknown?.length)
    lines.push(
      `SecretsUnknown (not rewritten blind): ${doc.secretsUnknown.join(', ')}; converge reconcile --write-secrets [NAME...] writes them.`,
    );
  if (doc.conflicts?.length)
    lines.push(
      `Conflict (converge stopped writing to these): ${doc.conflicts.join(', ')}; see NOTE below. Writing resumes when the desired state changes to a new one.`,
    );
  if (doc.window?.blocked && doc.window.message) lines.push(`Change window: ${doc.window.message}.`);
  else if (doc.window)
    lines.push(
      `Change windows: none blocks writes now${doc.window.nextChange ? `; the next opens or closes at ${doc.window.nextChange}` : ''}.`,
    );
  // The reason opens with "prune refused" (src/plan/prune.ts): said once.
  if (doc.pruneRefused)
    lines.push(
      /^prune refused/i.test(doc.pruneRefused) ? `P${doc.pruneRefused.slice(1)}` : `Prune refused: ${doc.pruneRefused}`,
    );
  if (doc.manifestVersion)
    lines.push(
      `Manifests: ${doc.manifestVersion.kind === 'git' ? '' : 'not in git, '}${versionText(doc.manifestVersion)}, read at ${doc.manifestVersion.readAt ?? '?'}`,
    );
  return lines;
}

/** The last reconcile (its summary, or why it failed) and the last that succeeded. */
function reconcileLines(doc: StatusDocument): string[] {
  const lines: string[] = [];
  const last = doc.lastReconcile;
  if (!last) lines.push('No reconcile yet.');
  else if (!last.ok)
    lines.push(
      `Last reconcile #${last.id} (${last.trigger}) FAILED at ${last.finishedAt}: ${last.error ?? 'unknown error'}`,
    );
  else {
    const s = last.summary ?? {};
    lines.push(
      `Last reconcile #${last.id} (${last.trigger}) at ${last.finishedAt} in ${last.durationMs} ms: ${s.create ?? 0} to create, ${s.update ?? 0} to update, ` +
        `${s.noop ?? 0} unchanged, ${s.orphan ?? 0} orphaned, ${s.blocked ?? 0} blocked; ${counted(last.enqueued, 'job')} enqueued, ${last.drifted} drifted, ${last.held} held at last good`,
    );
  }
  if (doc.lastSuccessfulReconcileAt && last && !last.ok)
    lines.push(`Last successful reconcile: ${doc.lastSuccessfulReconcileAt}`);
  return lines;
}

/** The resources counted by sync and health, what is held, and the table of rows. */
function resourceLines(doc: StatusDocument): string[] {
  const lines: string[] = [];
  const d = doc.daemon ?? {};
  // The SYNC column counted (the daemon counts the rows it lists); an older daemon's one-word states otherwise.
  const totals = new Map<string, number>(Object.entries(doc.sync ?? {}));
  if (!doc.sync)
    for (const byState of Object.values(doc.counts ?? {}))
      for (const [state, n] of Object.entries(byState)) totals.set(state, (totals.get(state) ?? 0) + n);
  const summary = [...totals].filter(([, n]) => n > 0).map(([state, n]) => `${n} ${state}`);
  const pending = doc.deletesPending?.length ?? 0;
  lines.push(
    `Resources: ${summary.length ? summary.join(', ') : 'none'}${pending > 0 ? `; ${counted(pending, 'delete')} pending` : ''}`,
  );
  const health = Object.entries(doc.health ?? {})
    .filter(([, n]) => n > 0)
    .map(([h, n]) => `${n} ${h}`);
  if (health.length) lines.push(`Health: ${health.join(', ')}`);
  if (doc.held?.length)
    lines.push(
      `Held (this desired state is not sent again: a failed revision, a write refused for good, or a name taken on the service; each row's note says which): ${doc.held.join(', ')}; a changed manifest, or converge reconcile --retry-failed [NAME...], lets it be written.`,
    );
  const resources = doc.resources ?? [];
  const offered = Boolean(
    doc.held?.length || doc.secretsUnknown?.length || doc.conflicts?.length || resources.some((r) => r.hold),
  );
  if (offered && d.reconcileEndpoint === false) {
    lines.push(
      `POST /reconcile is off on this daemon, so "converge reconcile --retry-failed" and "--write-secrets" are refused: restart it with ${WEBHOOK_TOKEN_ENV} set, and give the same value to converge reconcile (docs/daemon.md).`,
    );
  }
  if (resources.length > 0) {
    lines.push('');
    const rows = [['KIND', 'NAME', 'SYNC', 'HEALTH', 'REASON', 'ACTION', 'NOTE']];
    for (const r of resources) {
      const sync = r.sync?.status ?? r.state;
      // A hold names itself (NameTaken, WriteRefused) unless a degraded health says more (a failed revision's status).
      const reason =
        r.hold && r.health?.status !== 'degraded'
          ? r.hold.reason
          : r.health && r.health.status !== 'healthy'
            ? r.health.reason
            : (r.sync?.reason ?? '');
      rows.push([
        r.kind,
        r.name,
        sync + (r.heldAtLastGood ? '*' : ''),
        r.health?.status ?? 'unknown',
        reason,
        r.action,
        note(r),
      ]);
    }
    lines.push(...pad(rows));
    if (resources.some((r) => r.heldAtLastGood))
      lines.push('  * manifest file has errors: the last good version stays in force');
  }
  return lines;
}

/** What follows the table: failed builds' log lines, orphans, manifest problems. */
function findingLines(doc: StatusDocument): string[] {
  const lines: string[] = [];
  for (const [key, log] of Object.entries(doc.failedBuildLogs ?? {})) {
    if (log.lines.length > 0)
      lines.push(
        '',
        `Last build log lines of ${key}, revision ${log.revisionId} (converge logs ${key.slice(key.indexOf('/') + 1)} --build shows more):`,
        ...log.lines.map((l) => `  | ${l}`),
      );
    else if (log.note) lines.push('', `No build log of ${key}, revision ${log.revisionId}: ${log.note}`);
  }
  if (doc.orphans?.length) lines.push('', `Orphans (live, in no manifest; never deleted): ${doc.orphans.join(', ')}`);
  const diagnostics = doc.plan?.diagnostics ?? [];
  if (diagnostics.length) {
    lines.push('', 'Manifest problems:');
    for (const p of diagnostics) lines.push(`  ${p.file}:${p.line}:${p.column}: ${p.severity}: ${p.message}`);
  }
  return lines;
}

/** Runs `converge status [--url URL] [--output text|json]`; returns the exit code. */
export async function runStatusCommand(args: ParsedArgs, io: CommandIo): Promise<number> {
  const output = (args.values.output as string | undefined) ?? 'text';
  if (!STATUS_FORMATS.includes(output as (typeof STATUS_FORMATS)[number]))
    throw new UsageError(`--output "${output}" is not one of ${STATUS_FORMATS.join(', ')}`);
  const explicit = args.values.url as string | undefined;
  const url = daemonBaseUrl(explicit ?? `http://127.0.0.1:${(await resolveSettings(args, io.env)).httpPort}`);
  if (output === 'json') {
    // The document as /status gives it (format 1), with the readiness beside it.
    const [status, ready] = await Promise.all([getJson(`${url}/status`), getJson(`${url}/readyz`)]);
    if (status.status !== 200) throw notDaemon(url, status.status);
    io.stdout.write(JSON.stringify({ ...(status.body as object), readiness: ready.body }, null, 2) + '\n');
    return 0;
  }
  const [status, ready] = await Promise.all([textDocument(url), getJson(`${url}/readyz`)]);
  io.stdout.write(renderStatus(url, status, ready.body as Readiness));
  return 0;
}

/**
 * What the text reads: /status in format 2 (the smaller document, src/core/status-compact.ts), made whole; a daemon
 * that does not know format 2 (400) is asked for the document as it gives it.
 */
async function textDocument(url: string): Promise<StatusDocument> {
  let status = await getJson(`${url}/status?format=2`);
  if (status.status === 400) status = await getJson(`${url}/status`);
  if (status.status !== 200) throw notDaemon(url, status.status);
  return decodeStatus(status.body as Record<string, unknown>);
}

/** A /status that does not answer 200: one clear error. */
function notDaemon(url: string, status: number): ConvergeError {
  return new ConvergeError('E_STATUS', `${url}/status answered ${status}; is that a converge daemon?`);
}
