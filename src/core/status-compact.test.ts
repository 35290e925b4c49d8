// Format 2 of /status: what it leaves out and references comes back whole; it is much smaller where rows repeat.
import { describe, expect, it } from 'vitest';
import { decodeStatus, encodeStatus, ROW_OMITTED } from './status-compact.js';

function row(i: number): Record<string, unknown> {
  const name = `bench-${String(i).padStart(5, '0')}`;
  const revisionId = `f4da961f-c08e-5dba-acd1-${String(i).padStart(12, '0')}`;
  const message = `the service hides OPENAI_API_KEY; run "converge reconcile --write-secrets ${name}" to write it once`;
  return {
    key: `Deployment/${name}`,
    kind: 'Deployment',
    name,
    file: `team-${String(i % 3).padStart(3, '0')}/${name}.yaml`,
    action: 'adopt',
    state: 'out_of_sync',
    sync: { status: 'out_of_sync', reason: 'SecretsUnknown', message },
    health: { status: 'healthy', reason: 'RevisionDeployed', message: `revision ${revisionId} is active`, revisionId },
    reason: `SecretsUnknown: ${message}`,
    error: null,
    drift: null,
    heldAtLastGood: false,
    job: null,
    deploymentId: `d-${i}`,
    desired: 'ab'.repeat(32),
    secretsUnknown: ['OPENAI_API_KEY'],
    syncReason: 'SecretsUnknown',
  };
}

const warning = 'spec.source_config.deployment_type is not set: the service will create it as prod';
function plan(n: number): Record<string, unknown> {
  return {
    format_version: '1',
    summary: { adopt: n },
    changes: Array.from({ length: n }, (_, i) => ({
      kind: 'Deployment',
      name: `bench-${i}`,
      action: 'adopt',
      fields: [{ path: 'x', before: { t: 1 }, after: { $: 'literal' }, sensitive: false }],
      reason: 'converge did not create this live resource',
    })),
    diagnostics: Array.from({ length: n }, (_, i) => ({
      severity: 'warning',
      file: `f${i}.yaml`,
      line: 9,
      column: 3,
      message: warning,
    })),
  };
}

/** What format 2 gives back of a format 1 document: every row less ROW_OMITTED. */
function lessOmitted(doc: Record<string, unknown>): Record<string, unknown> {
  const rows = (doc.resources as Array<Record<string, unknown>>).map((r) =>
    Object.fromEntries(Object.entries(r).filter(([field]) => !ROW_OMITTED.includes(field))),
  );
  return { ...doc, format_version: '2', resources: rows };
}

describe('format 2 of /status', () => {
  it('gives back every row and the plan whole, data that looks like a reference included', () => {
    const doc = {
      format_version: '1',
      daemon: { dir: 'm' },
      resources: Array.from({ length: 50 }, (_, i) => row(i)),
      plan: plan(50),
      orphans: ['Deployment/x'],
    };
    const encoded = encodeStatus(doc);
    expect(encoded.format_version).toBe('2');
    expect(decodeStatus(JSON.parse(JSON.stringify(encoded)) as Record<string, unknown>)).toEqual(lessOmitted(doc));
  });

  it('leaves out kind, name, defaults and fingerprints, and writes a repeated string once', () => {
    const doc = { format_version: '1', resources: Array.from({ length: 1000 }, (_, i) => row(i)), plan: plan(1000) };
    const encoded = encodeStatus(doc);
    const first = (encoded.resources as Array<Record<string, unknown>>)[0]!;
    for (const field of ['kind', 'name', 'error', 'drift', 'job', 'heldAtLastGood', 'desired'])
      expect(first).not.toHaveProperty(field);
    // The strings that name the row (its message, its reason, its file in each of 3 folders) are one template each.
    expect((encoded.strings as string[]).filter((s) => s.includes('{name}'))).toHaveLength(5);
    expect((encoded.strings as string[]).filter((s) => s === warning)).toHaveLength(1);
    expect(JSON.stringify(encoded).length).toBeLessThan(JSON.stringify(doc).length * 0.6);
  });

  it('writes a string with a placeholder, or used once, as it is; references the strings of a planDelta', () => {
    const odd = {
      ...row(1),
      reason: 'a {name} literal that is long enough to count',
      error: 'a unique error message, long enough to count',
    };
    const doc = {
      format_version: '1',
      resources: [odd, { ...odd, key: 'Deployment/other' }],
      planDelta: {
        changes: {
          changed: [{ key: 'k', after: null, entries: [{ reason: warning }, { reason: warning }] }],
          removed: [],
        },
      },
    };
    const encoded = encodeStatus(doc);
    expect(encoded.strings as string[]).toContain(warning);
    const decoded = decodeStatus(JSON.parse(JSON.stringify(encoded)) as Record<string, unknown>);
    expect(decoded.planDelta).toEqual(doc.planDelta);
    expect((decoded.resources as unknown[])[0]).toEqual(
      Object.fromEntries(Object.entries(odd).filter(([f]) => f !== 'desired')),
    );
  });

  it('gives a format 1 answer back as it is', () => {
    const doc = { format_version: '1', resources: [{ key: 'Deployment/a', $: 1 }] };
    expect(decodeStatus(doc)).toBe(doc);
  });
});
