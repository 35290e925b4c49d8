import { describe, expect, it } from 'vitest';
import type { PlanChange } from '../model.js';
import { planKeyProblem, signatureProblem } from './signature.js';
import { planChecksum, readSavedPlan, savedPlanText, type PlannedWrite, type SavedPlanContent } from './schema.js';
import { staleLine, stalenessOf, type FreshState, type Observed } from './stale.js';
import { optionDifferences } from './agree.js';

const HASH = 'a'.repeat(64);
const LIVE = {
  id: 'd-1',
  updated_at: '2026-11-27T10:00:00.000Z',
  latest_revision_id: 'r-1',
  active_revision_id: 'r-1',
};
const CHANGE: PlanChange = {
  kind: 'Deployment',
  name: 'api',
  action: 'update',
  new_revision: false,
  fields: [{ path: 'source_config.resource_spec.max_scale', before: 2, after: 4, sensitive: false }],
  reason: null,
};
const WRITE: PlannedWrite = {
  kind: 'Deployment',
  name: 'api',
  action: 'update',
  op: 'update',
  fields: ['source_config.resource_spec.max_scale'],
  deployment_id: 'd-1',
  desired: HASH,
  secrets: { TOKEN: HASH },
  seen: { live: LIVE, applied_at: null },
};

function content(): SavedPlanContent {
  return {
    format: 'converge-plan',
    format_version: 1,
    created_at: '2026-11-27T10:01:00.000Z',
    service: { api_url: 'http://127.0.0.1:1', tenant_id: null },
    manifests: {
      dir: 'manifests',
      vars: [],
      overlays: [],
      version: { kind: 'content', id: 'abcdef123456', readAt: '2026-11-27T10:01:00.000Z' },
      content_id: 'abcdef123456',
    },
    options: { prune: false, max_deletes: 10, adopt: 'auto', name_prefix: null },
    plan: {
      format_version: '1',
      summary: { create: 0, update: 1, adopt: 0, delete: 0, noop: 0, orphan: 0, blocked: 0, suspended: 0 },
      changes: [CHANGE],
      diagnostics: [{ severity: 'warning', file: 'a.yaml', line: 1, column: 1, message: 'w' }],
      notes: ['n'],
      health: [
        {
          kind: 'Deployment',
          name: 'api',
          status: 'progressing',
          reason: 'RevisionBuilding',
          message: 'building',
          revisionId: 'r-1',
          revisionStatus: 'BUILDING',
          revisionCreatedAt: '2026-01-01T00:00:00Z',
          revisionUpdatedAt: '2026-01-01T00:01:00Z',
        },
      ],
    },
    writes: [WRITE],
  };
}

function fresh(over: Partial<FreshState> = {}, observed: Partial<Observed> = {}): FreshState {
  return {
    contentId: 'abcdef123456',
    version: { kind: 'content', id: 'abcdef123456', readAt: 'now' },
    changes: [CHANGE],
    writes: [WRITE],
    observed: new Map([
      ['Deployment/api', { secrets: { TOKEN: HASH }, desired: HASH, live: LIVE, applied_at: null, ...observed }],
    ]),
    ...over,
  };
}

describe('saved plan file', () => {
  it('reads back what it wrote, and refuses an edit, a truncation, another version and another document', () => {
    const text = savedPlanText(content());
    const read = readSavedPlan(text);
    expect(read).toMatchObject({
      ok: true,
      plan: { ...content(), checksum: expect.stringMatching(/^sha256:[0-9a-f]{64}$/) },
    });
    expect(() => savedPlanText({ ...content(), writes: [{ ...WRITE, extra: 1 } as PlannedWrite] })).toThrow();
    expect(readSavedPlan(text.replace('"after": 4', '"after": 5'))).toMatchObject({
      ok: false,
      problem: expect.stringContaining('checksum does not match'),
    });
    expect(readSavedPlan(text.slice(0, 100))).toMatchObject({
      ok: false,
      problem: expect.stringContaining('not JSON'),
    });
    expect(readSavedPlan(text.replace('"format_version": 1,', '"format_version": 2,'))).toMatchObject({
      ok: false,
      problem: expect.stringContaining('format version 2'),
    });
    expect(readSavedPlan('[]')).toMatchObject({ ok: false, problem: expect.stringContaining('not a converge plan') });
    expect(readSavedPlan(text.replace('"op": "update"', '"op": "explode"'))).toMatchObject({
      ok: false,
      problem: expect.stringContaining('writes.0.op'),
    });
  });

  it('refuses a plan whose summary or changes disagree with its writes, checksum recomputed', () => {
    const reread = (edit: (c: SavedPlanContent) => void) => {
      const c = content();
      edit(c);
      return readSavedPlan(savedPlanText(c));
    };
    const DELETE: PlannedWrite = {
      kind: 'Deployment',
      name: 'gone',
      action: 'delete',
      op: 'delete',
      fields: [],
      deployment_id: 'd-2',
      secrets: {},
      seen: { live: { ...LIVE, id: 'd-2' }, applied_at: '2026-11-20T00:00:00.000Z' },
    };
    // A delete added to the writes, the plan left saying "0 to delete".
    expect(reread((c) => c.writes.push(DELETE))).toMatchObject({
      ok: false,
      problem: expect.stringContaining('it writes Deployment/gone (delete) but its plan does not show it'),
    });
    // The change added too, the summary left as it was.
    expect(
      reread((c) => {
        c.writes.push(DELETE);
        c.plan.changes.push({
          kind: 'Deployment',
          name: 'gone',
          action: 'delete',
          new_revision: false,
          fields: [],
          reason: 'owned by converge, no longer declared',
        });
      }),
    ).toMatchObject({
      ok: false,
      problem: expect.stringContaining('its summary says 0 to delete, its changes hold 1'),
    });
    // A write shown as another action.
    expect(reread((c) => (c.writes[0] = { ...WRITE, action: 'create', op: 'create' }))).toMatchObject({
      ok: false,
      problem: expect.stringContaining('but its plan shows update'),
    });
  });
});

describe('signed plans', () => {
  const KEY = 'k'.repeat(32);
  it('a plan signed under the key holds; unsigned, signed under another key, or edited and checksummed again, it does not', () => {
    const signed = readSavedPlan(savedPlanText(content(), KEY));
    if (!signed.ok) throw new Error(signed.problem);
    expect(signed.plan.signature).toMatch(/^hmac-sha256:[0-9a-f]{64}$/);
    expect(signatureProblem(signed.plan, KEY)).toBeUndefined();
    // No key set: a signed plan cannot be checked, so it is refused unless the command skips the check explicitly.
    expect(signatureProblem(signed.plan, undefined)).toMatch(
      /^it is signed, and CONVERGE_PLAN_KEY is not set: .* give --skip-signature-check/,
    );
    expect(signatureProblem(signed.plan, undefined, true)).toBeUndefined();
    const unsigned = readSavedPlan(savedPlanText(content()));
    if (!unsigned.ok) throw new Error(unsigned.problem);
    expect(unsigned.plan.signature).toBeUndefined();
    // Neither plan nor command has a key: nothing to check.
    expect(signatureProblem(unsigned.plan, undefined)).toBeUndefined();
    // A key that is set is checked whatever the flag says.
    expect(signatureProblem(unsigned.plan, KEY, true)).toMatch(/^it is not signed, and CONVERGE_PLAN_KEY is set/);
    expect(signatureProblem(unsigned.plan, KEY)).toMatch(/^it is not signed, and CONVERGE_PLAN_KEY is set/);
    expect(signatureProblem(signed.plan, 'x'.repeat(32))).toMatch(
      /^its signature does not match under CONVERGE_PLAN_KEY/,
    );
    // An edit (prune turned on) with the checksum recomputed: the checksum holds, the signature does not.
    const { checksum: _, ...edited } = { ...signed.plan, options: { ...signed.plan.options, prune: true } };
    const reread = readSavedPlan(JSON.stringify({ ...edited, checksum: planChecksum(edited) }));
    if (!reread.ok) throw new Error(reread.problem);
    expect(signatureProblem(reread.plan, KEY)).toMatch(/signature does not match/);
    // The key never reaches the file.
    expect(savedPlanText(content(), KEY)).not.toContain(KEY);
  });
});

describe('optionDifferences', () => {
  const OPTIONS = { prune: false, max_deletes: 5, adopt: 'auto' as const, name_prefix: null };
  it("names each option of the plan that is not the apply's own; targets compare as sets", () => {
    expect(optionDifferences(OPTIONS, { ...OPTIONS })).toEqual([]);
    expect(optionDifferences({ ...OPTIONS, prune: true }, OPTIONS)).toEqual([
      'the plan was made with --prune, this apply has no --prune',
    ]);
    expect(optionDifferences({ ...OPTIONS, max_deletes: 50 }, OPTIONS)).toEqual([
      'the plan was made with --max-deletes 50, this apply has --max-deletes 5',
    ]);
    expect(optionDifferences({ ...OPTIONS, targets: ['a', 'b'] }, { ...OPTIONS, targets: ['b', 'a'] })).toEqual([]);
    expect(optionDifferences({ ...OPTIONS, targets: ['a'] }, OPTIONS)).toEqual([
      'the plan was made with --target a, this apply has no --target',
    ]);
    expect(optionDifferences({ ...OPTIONS, name_prefix: 'x-', adopt: 'explicit' }, OPTIONS)).toHaveLength(2);
  });
});

describe('stalenessOf', () => {
  const saved = () => {
    const read = readSavedPlan(savedPlanText(content()));
    if (!read.ok) throw new Error(read.problem);
    return read.plan;
  };

  it('holds when everything reads as it did; a fresh write the plan lacks (a delete above all) makes it stale', () => {
    expect(stalenessOf(saved(), fresh())).toEqual({ changed: [] });
    const extra: PlannedWrite = { ...WRITE, name: 'other', action: 'delete', op: 'delete' };
    expect(stalenessOf(saved(), fresh({ writes: [WRITE, extra] }))).toEqual({
      changed: ['Deployment/other: it would be deleted now, and the plan does not hold that write'],
    });
  });

  it('names what changed: manifests, a rotated secret, the live resource, a write of converge, the decided write', () => {
    expect(stalenessOf(saved(), fresh({ contentId: '000000000000' })).changed).toEqual([
      'the manifests, variables files or overlays changed',
    ]);
    expect(stalenessOf(saved(), fresh({}, { secrets: { TOKEN: 'b'.repeat(64) } })).changed).toEqual([
      'Deployment/api: secret TOKEN changed (rotated)',
    ]);
    expect(
      stalenessOf(saved(), fresh({}, { live: { ...LIVE, updated_at: '2026-11-27T10:05:00.000Z' } })).changed[0],
    ).toContain('it changed live (updated_at 2026-11-27T10:00:00.000Z then, 2026-11-27T10:05:00.000Z now)');
    expect(stalenessOf(saved(), fresh({}, { live: null })).changed[0]).toContain('it is gone live');
    expect(stalenessOf(saved(), fresh({}, { applied_at: '2026-11-27T10:03:00.000Z' })).changed[0]).toContain(
      'converge wrote it since',
    );
    expect(
      stalenessOf(saved(), fresh({ writes: [], changes: [{ ...CHANGE, action: 'noop', fields: [] }] })).changed,
    ).toEqual(['Deployment/api: it needs no write now']);
    const moved = { ...CHANGE, fields: [{ ...CHANGE.fields[0]!, before: 3 }] };
    expect(stalenessOf(saved(), fresh({ changes: [moved] })).changed).toEqual([
      'Deployment/api: its planned change differs now (source_config.resource_spec.max_scale)',
    ]);
  });

  it('names the versions of changed manifests in git: an edit not committed is not its commit (issue 42, item 5)', () => {
    const commit = '23acd65'.padEnd(40, '0');
    const inGit = (uncommitted?: true) => ({
      kind: 'git' as const,
      id: commit,
      readAt: 'then',
      ...(uncommitted ? { uncommitted } : {}),
    });
    const planned = (version: ReturnType<typeof inGit>) => {
      const read = readSavedPlan(savedPlanText({ ...content(), manifests: { ...content().manifests, version } }));
      if (!read.ok) throw new Error(read.problem);
      return read.plan;
    };
    const stale = (then: ReturnType<typeof inGit>, now: ReturnType<typeof inGit>) =>
      stalenessOf(planned(then), fresh({ contentId: '000000000000', version: now })).changed[0];
    expect(stale(inGit(), inGit(true))).toBe(
      'the manifests, variables files or overlays changed (23acd65 then, uncommitted changes on top of 23acd65 now)',
    );
    expect(stale(inGit(true), inGit())).toBe(
      'the manifests, variables files or overlays changed (uncommitted changes on top of 23acd65 then, 23acd65 now)',
    );
    expect(stale(inGit(true), inGit(true))).toBe(
      'the manifests, variables files or overlays changed (uncommitted changes on top of 23acd65, edited again since)',
    );
  });

  it('says it in one line, the first three named', () => {
    expect(staleLine(['a', 'b', 'c', 'd', 'e'])).toBe(
      'the plan is stale: since it was made, a; b; c; and 2 more; nothing was written; run plan again',
    );
  });
});

describe('the key as the environment gives it', () => {
  it('unset is no key; set but empty or only whitespace fails closed; too short is refused; the value is never in the message', () => {
    expect(planKeyProblem(undefined)).toBeUndefined();
    expect(planKeyProblem('k'.repeat(32))).toBeUndefined();
    for (const raw of ['', ' ', '\t\n  ']) expect(planKeyProblem(raw)).toMatch(/^CONVERGE_PLAN_KEY is set but empty: /);
    const short = 'short-key-value';
    expect(planKeyProblem(short)).toMatch(/^CONVERGE_PLAN_KEY is shorter than 32 characters/);
    expect(planKeyProblem(short)).not.toContain(short);
  });
});
