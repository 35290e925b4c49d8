// FindingsLog: each manifest problem logged once while it lasts, and a targeted reconcile says only what changed in the files it read.
import { describe, expect, it } from 'vitest';
import pino from 'pino';
import type { Diagnostic } from '../../core/diagnostics.js';
import type { ReconcileOutcome } from '../cycle/cycle.js';
import { FindingsLog, REPEATED_PROBLEM_FILES } from './findings-log.js';

function warning(file: string, message: string): Diagnostic {
  return { severity: 'warning', file, line: 2, column: 3, message, code: 'W_TEST' };
}

function outcome(diagnostics: Diagnostic[], files?: string[]): ReconcileOutcome {
  const summary = { create: 0, update: 0, adopt: 0, delete: 0, noop: 0, orphan: 0, blocked: 0, suspended: 0 };
  return {
    plan: { format_version: '1', summary, changes: [], diagnostics },
    resources: new Map(),
    live: [],
    files: 0,
    outcomes: new Map(),
    held: [],
    drift: [],
    enqueued: 0,
    ...(files ? { targeted: { keys: new Set<string>(), files: new Set(files) } } : {}),
  };
}

function logged(): { findings: FindingsLog; lines: string[] } {
  const lines: string[] = [];
  const log = pino(
    { level: 'info' },
    { write: (line: string) => void lines.push((JSON.parse(line) as { diagnostic?: string }).diagnostic ?? '') },
  );
  return { findings: new FindingsLog(log), lines };
}

describe('FindingsLog.diagnostics', () => {
  it('logs a problem when it appears, not again while it lasts, and again once it came back', () => {
    const { findings, lines } = logged();
    findings.diagnostics(outcome([warning('a.yaml', 'one'), warning('b.yaml', 'two')]));
    expect(lines).toEqual(['a.yaml:2:3: warning: one', 'b.yaml:2:3: warning: two']);
    findings.diagnostics(outcome([warning('a.yaml', 'one'), warning('b.yaml', 'two')]));
    findings.diagnostics(outcome([warning('b.yaml', 'two')]));
    findings.diagnostics(outcome([warning('a.yaml', 'one'), warning('b.yaml', 'two')]));
    expect(lines).toHaveLength(3);
  });

  it("reads a targeted reconcile's own files only: the problems of the others stay as last logged", () => {
    const { findings, lines } = logged();
    findings.diagnostics(outcome([warning('a.yaml', 'one'), warning('b.yaml', 'two')]));
    lines.length = 0;
    // a.yaml was edited: its problem changed; b.yaml's is kept from the last reconcile.
    findings.diagnostics(outcome([warning('a.yaml', 'three'), warning('b.yaml', 'two')], ['a.yaml']));
    expect(lines).toEqual(['a.yaml:2:3: warning: three']);
    // a.yaml's problem is gone after the next edit; a full reconcile that finds it again says it again, and not b.yaml's.
    findings.diagnostics(outcome([warning('b.yaml', 'two')], ['a.yaml']));
    findings.diagnostics(outcome([warning('a.yaml', 'three'), warning('b.yaml', 'two')]));
    expect(lines).toEqual(['a.yaml:2:3: warning: three', 'a.yaml:2:3: warning: three']);
  });

  it('says a problem more than REPEATED_PROBLEM_FILES files share in one line, each file at debug; fewer, a line each', () => {
    const lines: Array<{ level: number; msg: string; diagnostic?: string; files?: number; more?: string[] }> = [];
    const log = pino({ level: 'debug' }, { write: (line: string) => void lines.push(JSON.parse(line) as never) });
    const findings = new FindingsLog(log);
    const files = (n: number, prefix: string): string[] => Array.from({ length: n }, (_, i) => `${prefix}-${i}.yaml`);
    const many = files(REPEATED_PROBLEM_FILES + 1, 'many').map((f) => warning(f, 'tier not set'));
    const few = files(REPEATED_PROBLEM_FILES, 'few').map((f) => warning(f, 'unknown field'));
    findings.diagnostics(outcome([...many, ...few, { ...warning('many-0.yaml', 'tier not set'), severity: 'error' }]));

    const warned = lines.filter((l) => l.level === 40);
    // The shared problem: one line naming its first file, the number of files and the next locations.
    expect(warned.filter((l) => l.msg === `manifest problem in ${REPEATED_PROBLEM_FILES + 1} files`)).toEqual([
      expect.objectContaining({
        diagnostic: 'many-0.yaml:2:3: warning: tier not set',
        files: REPEATED_PROBLEM_FILES + 1,
        more: many.slice(1, 10).map((d) => `${d.file}:2:3`),
      }),
    ]);
    // REPEATED_PROBLEM_FILES files of one problem, and the same message as an error: a line each.
    const each = warned.filter((l) => l.msg === 'manifest problem').map((l) => l.diagnostic);
    expect(each).toEqual([
      ...few.map((d) => `${d.file}:2:3: warning: unknown field`),
      'many-0.yaml:2:3: error: tier not set',
    ]);
    // Every file of the shared problem at debug, and none said again by the next reconcile that finds the same.
    expect(lines.filter((l) => l.level === 20).map((l) => l.diagnostic)).toEqual(
      many.map((d) => `${d.file}:2:3: warning: tier not set`),
    );
    const before = lines.length;
    findings.diagnostics(outcome([...many, ...few]));
    expect(lines.length).toBe(before);
  });

  it('counts the files a problem is in, not its occurrences: twice in each of REPEATED_PROBLEM_FILES files is a line each', () => {
    const { findings, lines } = logged();
    const twice = Array.from({ length: REPEATED_PROBLEM_FILES }, (_, i) => [
      warning(`f-${i}.yaml`, 'tier not set'),
      { ...warning(`f-${i}.yaml`, 'tier not set'), line: 9 },
    ]).flat();
    findings.diagnostics(outcome(twice));
    expect(lines).toHaveLength(2 * REPEATED_PROBLEM_FILES);
    expect(lines[1]).toBe('f-0.yaml:9:3: warning: tier not set');
  });
});
