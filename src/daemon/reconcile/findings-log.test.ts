// FindingsLog: each manifest problem logged once while it lasts, and a targeted reconcile says only what changed in the files it read.
import { describe, expect, it } from 'vitest';
import pino from 'pino';
import type { Diagnostic } from '../../core/diagnostics.js';
import type { ReconcileOutcome } from '../cycle/cycle.js';
import { FindingsLog } from './findings-log.js';

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
});
