// What a reconcile found (manifest problems, why a resource is not written), logged when it appears or changes (drift: drift.ts).
import type { Logger } from 'pino';
import { formatDiagnostic, type Diagnostic } from '../../core/diagnostics.js';
import { textHash } from '../../core/hash.js';
import { skipLine } from '../../core/decide.js';
import type { ReconcileOutcome } from '../cycle/cycle.js';
import type { ReconcileRecord } from '../status/reconcile-record.js';
import { DriftLog } from './drift.js';
import { groupBy } from '../../core/group-by.js';

/** Reasons for not writing that are no news in the log: in sync, a job queued or just done, an orphan (its own line). */
const ROUTINE: ReadonlySet<string> = new Set(['Synced', 'Applied', 'Applying', 'Orphan']);

/**
 * The lines last logged about one file, each as its hash (textHash, src/core/hash.ts): the hash when there is one (most files), else the
 * set of them. A line names its file and says the problem (about 270 bytes); its hash is 22 characters.
 */
type FileLines = string | Set<string>;

function hasLine(lines: FileLines | undefined, line: string): boolean {
  return typeof lines === 'string' ? lines === line : lines?.has(line) === true;
}

function withLine(lines: FileLines | undefined, line: string): FileLines {
  if (lines === undefined || lines === line) return line;
  return typeof lines === 'string' ? new Set([lines, line]) : lines.add(line);
}

/** A manifest problem as the plan carries it (its code is not logged). */
type Problem = Omit<Diagnostic, 'code'>;

/** More files than this with one problem (the same severity and message) are said in one line, each file at debug. */
export const REPEATED_PROBLEM_FILES = 10;
/** The locations a repeated problem's line names besides its first. */
const REPEATED_EXAMPLES = 9;

/**
 * Logs each new manifest problem: one line each (`diagnostic`, file:line:column and the message), except a problem
 * more than REPEATED_PROBLEM_FILES files share (a setting left out of every manifest), which is one line with its first
 * occurrence, the number of files and a few more locations, and each file's own line at debug: a fleet of 10,000
 * files without the same field is one warning, not 10,000.
 */
function sayDiagnostics(log: Logger, said: readonly Problem[]): void {
  const byProblem = groupBy(said, (d) => `${d.severity}\u0000${d.message}`);
  for (const list of byProblem.values()) {
    const files = new Set(list.map((d) => d.file)).size;
    if (files <= REPEATED_PROBLEM_FILES) {
      for (const d of list) log.warn({ diagnostic: formatDiagnostic(d) }, 'manifest problem');
      continue;
    }
    const more = list.slice(1, 1 + REPEATED_EXAMPLES).map((d) => `${d.file}:${d.line}:${d.column}`);
    log.warn({ diagnostic: formatDiagnostic(list[0]!), files, more }, `manifest problem in ${files} files`);
    if (log.isLevelEnabled('debug'))
      for (const d of list) log.debug({ diagnostic: formatDiagnostic(d) }, 'manifest problem');
  }
}

/** Remembers what it last logged of each kind, so a resync that finds the same says nothing again. */
export class FindingsLog {
  /** The problems last logged, by the file they are about: each diagnostic's line, and each file kept at its last good version. */
  private loggedDiagnostics = new Map<string, FileLines>();
  /** The prune refusal last logged (a file that fails to load, a guard), if one stands. */
  private loggedRefusal: string | undefined;
  /** Per resource, why it was last logged as not written. */
  private loggedNotWritten = new Map<string, string>();
  /** The resources held as SecretsUnknown last logged. */
  private loggedSecretsUnknown = '';

  /** Drift, said when it appears or changes (drift.ts). */
  readonly drift: DriftLog;

  constructor(private readonly log: Logger) {
    this.drift = new DriftLog(log);
  }

  /** The resources held as SecretsUnknown (their keys), when they changed. */
  secretsUnknown(held: readonly string[]): void {
    if (held.join() === this.loggedSecretsUnknown) return;
    this.loggedSecretsUnknown = held.join();
    const why =
      'SecretsUnknown: resources whose only difference is secrets the service hides and no applied state' +
      ' records; not rewritten blind (converge reconcile --write-secrets NAME writes them)';
    if (held.length > 0) this.log.warn({ resources: held.slice(0, 20), count: held.length }, why);
  }

  /**
   * The line of every reconcile that ended with a plan: its counts, logged once what it decided is `written` to Redis
   * (its folds and its record), so that when it is logged its rows are on /status.
   */
  async reconciled(record: ReconcileRecord, outcome: ReconcileOutcome, written: () => Promise<void>): Promise<void> {
    await written();
    const s = outcome.plan.summary;
    const { id: reconcile, trigger, durationMs: ms, files, live, enqueued, drifted, held } = record;
    const planned = {
      create: s.create,
      update: s.update,
      adopt: s.adopt,
      delete: s.delete,
      noop: s.noop,
      orphan: s.orphan,
      blocked: s.blocked,
    };
    const read = { revisionReads: outcome.revisionReads ?? 0, targeted: outcome.targeted?.keys.size };
    const cycle = record.cycle ? { cycle: record.cycle } : {};
    this.log.info(
      { reconcile, trigger, ms, files, live, ...planned, enqueued, drifted, held, ...read, ...cycle },
      'reconciled',
    );
  }

  /**
   * Each manifest problem once, each file kept at its last good version once, and a prune refusal once, while they
   * last. A targeted reconcile read only its files: the problems of every other file are as last logged.
   */
  diagnostics(outcome: ReconcileOutcome): void {
    const read = outcome.targeted?.files;
    const before = read
      ? new Map([...read].map((file) => [file, this.loggedDiagnostics.get(file)] as const))
      : this.loggedDiagnostics;
    const now = read ? this.loggedDiagnostics : new Map<string, FileLines>();
    for (const file of read ?? []) now.delete(file);
    const note = (file: string, line: string, say: () => void): void => {
      const hash = textHash(line);
      if (!hasLine(before.get(file), hash)) say();
      now.set(file, withLine(now.get(file), hash));
    };
    const said: Problem[] = [];
    for (const d of outcome.plan.diagnostics) {
      if (read && !read.has(d.file)) continue;
      note(d.file, formatDiagnostic(d), () => said.push(d));
    }
    sayDiagnostics(this.log, said);
    for (const held of outcome.held) {
      if (read && !read.has(held.file)) continue;
      note(held.file, `held:${held.key}:${held.error}`, () =>
        this.log.warn(
          { key: held.key, file: held.file, error: held.error },
          'manifest file has errors; the last good version of its resource stays in force',
        ),
      );
    }
    this.loggedDiagnostics = now;
    const refused = outcome.plan.prune_refused;
    if (refused !== undefined && refused !== this.loggedRefusal)
      this.log.warn({ reason: refused }, 'prune refused: nothing is deleted');
    this.loggedRefusal = refused;
  }

  /**
   * Why a resource is not written, in the words apply and status use (skipLine), logged when the reason appears or
   * changes; the routine ones (in sync, a job queued or just done, an orphan) are not news.
   */
  notWritten(outcome: ReconcileOutcome): void {
    const now = new Map<string, string>();
    for (const o of outcome.outcomes.values()) {
      if (!o.skip || ROUTINE.has(o.skip.code)) continue;
      const line = skipLine(o)!;
      now.set(o.key, line);
      if (this.loggedNotWritten.get(o.key) !== line) this.log.info({ key: o.key, reason: o.skip.code }, line);
    }
    this.loggedNotWritten = now;
  }
}
