// Unit tests of ownership in the plan: adopt (auto, explicit, annotation), and opt-in prune with its guards, in every format.
import { orphanDeployments } from './summary.js';
import { describe, expect, it } from 'vitest';
import { planExitCode } from '../core/exit-code.js';
import { EMPTY_FILE_FIX, type UnseenFile } from '../core/declared-files.js';
import type { AppliedRecord, DeploymentResource, LiveDeployment } from '../core/model.js';
import { plan, type PlanInput } from './plan.js';
import { DELETE_REASON, type PruneOptions } from './prune.js';
import { renderJson } from './render/json.js';
import { renderMarkdown } from './render/markdown.js';
import { renderText } from './render/text.js';

/** A manifest file present that declares nothing, as the loader reports it (src/core/declared-files.ts emptyFiles). */
function emptied(file: string): UnseenFile {
  return { file, what: 'declares nothing', fix: EMPTY_FILE_FIX, empty: true };
}

function live(name: string, id: string, extra: Partial<LiveDeployment> = {}): LiveDeployment {
  return {
    id,
    name,
    source: 'external_docker',
    source_config: { resource_spec: { max_scale: 1 } },
    source_revision_config: { image_uri: `docker.io/acme/${name}:1` },
    secrets: [],
    created_at: '2026-01-01T00:00:00Z',
    updated_at: '2026-01-01T00:00:00Z',
    status: 'READY',
    ...extra,
  };
}

function desired(name: string, maxScale: number, extra: Partial<DeploymentResource> = {}): DeploymentResource {
  return {
    kind: 'Deployment',
    name,
    location: { file: `${name}.yaml`, line: 1, column: 1 },
    suspend: false,
    spec: {
      source: 'external_docker',
      source_config: { resource_spec: { max_scale: maxScale } },
      source_revision_config: { image_uri: `docker.io/acme/${name}:1` },
    },
    ...extra,
  };
}

function owned(
  id: string,
  origin: 'created' | 'adopted' = 'created',
  extra: Partial<AppliedRecord> = {},
): AppliedRecord {
  return { secrets: {}, appliedAt: '2026-01-02T00:00:00Z', ownership: { origin, id }, ...extra };
}

function input(partial: Partial<PlanInput>): PlanInput {
  return {
    resources: [],
    blocked: [],
    diagnostics: [],
    live: { deployments: [] },
    applied: new Map(),
    secretHashes: new Map(),
    ownershipKnown: true,
    ...partial,
  };
}

const PRUNE: PruneOptions = { enabled: true, maxDeletes: 5, available: true, declared: 1 };

describe('adopt', () => {
  const base = { resources: [desired('web', 2)], live: { deployments: [live('web', 'id-web')] } };

  it('auto: the first write to a live deployment converge does not own is adopt, counted, and a change for --detailed-exitcode', () => {
    const result = plan(input(base));
    expect(result.changes[0]).toMatchObject({ name: 'web', action: 'adopt' });
    expect(result.changes[0]!.reason).toContain('converge did not create this live resource');
    expect(result.summary).toMatchObject({ adopt: 1, update: 0 });
    expect(planExitCode(result, true)).toBe(2);
    expect(renderText(result, { color: false })).toContain('< adopt Deployment/web');
    expect(renderText(result, { color: false })).toContain('Plan: 0 to create, 0 to update, 1 to adopt,');
    expect(JSON.parse(renderJson(result)).summary.adopt).toBe(1);
    expect(renderMarkdown(result)).toContain('| create | update | adopt | delete |');
  });

  it('owned (record of this id, or an older record without one): update; a record of another id: adopt', () => {
    expect(plan(input({ ...base, applied: new Map([['Deployment/web', owned('id-web')]]) })).changes[0]!.action).toBe(
      'update',
    );
    expect(
      plan(input({ ...base, applied: new Map([['Deployment/web', { secrets: {}, appliedAt: 'x' }]]) })).changes[0]!
        .action,
    ).toBe('update');
    expect(plan(input({ ...base, applied: new Map([['Deployment/web', owned('id-gone')]]) })).changes[0]!.action).toBe(
      'adopt',
    );
  });

  it('a live deployment that matches its manifest stays noop; ownership unknown (no applied state) plans update', () => {
    expect(
      plan(input({ resources: [desired('web', 1)], live: { deployments: [live('web', 'id-web')] } })).changes[0]!
        .action,
    ).toBe('noop');
    expect(plan(input({ ...base, ownershipKnown: false })).changes[0]!.action).toBe('update');
  });

  it('explicit: blocked with the instruction unless the manifest carries converge/adopt: "true"', () => {
    const blocked = plan(input({ ...base, adoptPolicy: 'explicit' }));
    expect(blocked.changes[0]).toMatchObject({ action: 'blocked' });
    expect(blocked.changes[0]!.reason).toContain('add it, or give the manifest another metadata.name');
    expect(blocked.changes[0]!.reason).toContain('converge/adopt: "true"');
    expect(blocked.changes[0]!.reason).toContain('web.yaml:1:1');
    expect(planExitCode(blocked, false)).toBe(1);
    const allowed = plan(input({ ...base, resources: [desired('web', 2, { adopt: true })], adoptPolicy: 'explicit' }));
    expect(allowed.changes[0]!.action).toBe('adopt');
    // converge's own deployments need no annotation
    expect(
      plan(input({ ...base, adoptPolicy: 'explicit', applied: new Map([['Deployment/web', owned('id-web')]]) }))
        .changes[0]!.action,
    ).toBe('update');
  });
});

describe('prune', () => {
  const declared = [desired('a', 1)];
  const liveSet = [live('a', 'id-a'), live('b', 'id-b'), live('c', 'id-c'), live('foreign', 'id-f')];
  const applied = new Map([
    ['Deployment/a', owned('id-a')],
    ['Deployment/b', owned('id-b')],
    ['Deployment/c', owned('id-c', 'adopted')],
  ]);

  it('deletes exactly the owned, undeclared deployments, by id; never an unowned one', () => {
    const result = plan(input({ resources: declared, live: { deployments: liveSet }, applied, prune: PRUNE }));
    const byName = new Map(result.changes.map((c) => [c.name, c]));
    expect(byName.get('b')).toMatchObject({ action: 'delete', id: 'id-b', reason: DELETE_REASON });
    expect(byName.get('c')).toMatchObject({ action: 'delete', id: 'id-c' });
    expect(byName.get('foreign')).toMatchObject({ action: 'orphan' });
    expect(byName.get('a')!.action).toBe('noop');
    expect(result.summary).toMatchObject({ delete: 2, orphan: 1 });
    expect(planExitCode(result, true)).toBe(2);
    expect(renderText(result, { color: false })).toContain(
      '- delete Deployment/b (owned by converge, no longer declared)',
    );
    expect(renderMarkdown(result)).toMatch(
      /\| `-` \| `Deployment\/b` \| delete \| no \| owned by converge, no longer declared \|/,
    );
    expect(JSON.parse(renderJson(result)).changes.find((c: { name: string }) => c.name === 'b')).toMatchObject({
      action: 'delete',
      id: 'id-b',
    });
  });

  it('without --prune: released, with the hint; not a change for --detailed-exitcode', () => {
    const result = plan(
      input({ resources: declared, live: { deployments: liveSet }, applied, prune: { ...PRUNE, enabled: false } }),
    );
    expect(result.changes.find((c) => c.name === 'b')).toMatchObject({ action: 'orphan', released: true });
    expect(result.changes.find((c) => c.name === 'b')!.reason).toContain('converge apply --prune deletes it');
    expect(planExitCode(result, true)).toBe(0);
  });

  it('a deployment that took the name of an owned one (another id) is never deleted', () => {
    const result = plan(
      input({ resources: declared, live: { deployments: [live('b', 'id-new')] }, applied, prune: PRUNE }),
    );
    expect(result.changes.find((c) => c.name === 'b')).toMatchObject({ action: 'orphan' });
    expect(result.summary.delete).toBe(0);
  });

  it('converge/prune: "false" (kept), and one the service is deleting already, are not deleted', () => {
    const kept = new Map([...applied, ['Deployment/b', owned('id-b', 'created', { keep: true })]]);
    const result = plan(
      input({
        resources: declared,
        live: { deployments: [live('b', 'id-b'), live('c', 'id-c', { status: 'AWAITING_DELETE' })] },
        applied: kept,
        prune: PRUNE,
      }),
    );
    expect(result.changes.find((c) => c.name === 'b')!.reason).toContain('converge/prune: "false"');
    expect(result.changes.find((c) => c.name === 'c')!.reason).toContain('AWAITING_DELETE');
    expect(result.summary.delete).toBe(0);
  });

  it('guard: a manifest directory that yields no resources deletes nothing and says why', () => {
    const result = plan(
      input({ resources: [], live: { deployments: liveSet }, applied, prune: { ...PRUNE, declared: 0 } }),
    );
    expect(result.summary.delete).toBe(0);
    expect(result.notes?.join('\n')).toContain('the manifest directory yields no resources at all');
    expect(renderText(result, { color: false })).toContain(
      'an empty checkout or a wrong path must not delete a workspace',
    );
    expect(result.prune_refused).toContain('the manifest directory yields no resources at all');
    expect(renderText(result, { color: false })).not.toContain('No changes');
    expect(renderText(result, { color: false })).toContain(
      'Prune refused: nothing is deleted (see the note on prune).',
    );
  });

  it('guard: an empty manifest directory counts what it leaves in place per kind, an OAuth provider apart from the deployments', () => {
    const provider = {
      id: 'p-1',
      organization_id: 'o-1',
      provider_id: 'slack',
      name: 'Slack',
      client_id: 'c',
      auth_url: 'https://a.example',
      token_url: 'https://t.example',
      uses_pkce: true,
      code_challenge_method: 'S256',
      created_at: '2026-01-01T00:00:00Z',
      updated_at: '2026-01-01T00:00:00Z',
    };
    const withProvider = new Map([
      ...applied,
      ['OAuthProvider/slack', { secrets: {}, appliedAt: '2026-01-02T00:00:00Z' }],
    ]);
    const result = plan(
      input({
        resources: [],
        live: { deployments: liveSet, providers: { readable: true, providers: [provider] } },
        applied: withProvider,
        prune: { ...PRUNE, declared: 0 },
      }),
    );
    expect(result.prune_refused).toContain('(3 owned deployments and 1 OAuth provider left in place)');
    // converge_orphan_deployments counts the deployments only; the plan's summary counts every orphan.
    expect(result.summary.orphan).toBe(5);
    expect(orphanDeployments(result.changes)).toBe(4);
    expect(renderText(result, { color: false })).toContain(
      'Nothing to create or update; 4 live deployments and 1 OAuth provider are in no manifest.',
    );
  });

  it('guard: more deletes than --max-deletes deletes none and says why; at the limit it deletes them', () => {
    const over = plan(
      input({ resources: declared, live: { deployments: liveSet }, applied, prune: { ...PRUNE, maxDeletes: 1 } }),
    );
    expect(over.summary.delete).toBe(0);
    expect(over.notes?.join('\n')).toContain('it would delete 2 resources, more than --max-deletes 1');
    expect(over.prune_refused).toContain('more than --max-deletes 1');
    expect(over.changes.find((c) => c.name === 'b')!.reason).toContain('not deleted: prune refused');
    const within = plan(
      input({ resources: declared, live: { deployments: liveSet }, applied, prune: { ...PRUNE, maxDeletes: 2 } }),
    );
    expect(within.summary.delete).toBe(2);
    expect(within.prune_refused).toBeUndefined();
  });

  it('a file that fails to load: what converge applied and no loading file declares is unknown (blocked), nothing is deleted', () => {
    const unreadable = ['b.yaml:3:1', 'x/c.yaml:1:11'];
    const result = plan(
      input({ resources: declared, live: { deployments: liveSet }, applied, prune: PRUNE, unreadable }),
    );
    expect(result.summary).toMatchObject({ delete: 0, blocked: 2, orphan: 1 });
    for (const name of ['b', 'c']) {
      expect(result.changes.find((c) => c.name === name)).toMatchObject({ action: 'blocked', unknown: true });
      expect(result.changes.find((c) => c.name === name)!.reason).toBe(
        'unknown: no file that loads declares it, and b.yaml:3:1 and x/c.yaml:1:11 fail to load (they may declare it); neither deleted nor released until every file loads',
      );
    }
    // One converge never applied stays a plain orphan.
    expect(result.changes.find((c) => c.name === 'foreign')).toMatchObject({ action: 'orphan' });
    expect(result.prune_refused).toMatch(
      /^prune refused, nothing is deleted: b\.yaml:3:1 and x\/c\.yaml:1:11 fail to load; .*the 2 owned resources no file that loads declares are unknown, not deleted/,
    );
    expect(result.notes).toContain(result.prune_refused);
    expect(planExitCode(result, true)).toBe(1);
    expect(renderText(result, { color: false })).not.toContain('no longer declared');
    expect(renderMarkdown(result)).not.toContain('no longer declared');
    // Without --prune: unknown too, never "no longer declared ... converge apply --prune deletes it"; no refusal to state.
    const off = plan(
      input({
        resources: declared,
        live: { deployments: liveSet },
        applied,
        prune: { ...PRUNE, enabled: false },
        unreadable: ['b.yaml:3:1'],
      }),
    );
    expect(off.changes.find((c) => c.name === 'b')).toMatchObject({ action: 'blocked', unknown: true });
    expect(off.prune_refused).toBeUndefined();
  });

  it('a service without DELETE: prune stays off and the plan says so', () => {
    const result = plan(
      input({
        resources: declared,
        live: { deployments: liveSet },
        applied,
        prune: { ...PRUNE, available: { note: 'prune is off: no DELETE' } },
      }),
    );
    expect(result.summary.delete).toBe(0);
    expect(result.notes).toContain('prune is off: no DELETE');
  });
});

describe('a file present that declares nothing is not a removal', () => {
  const base = {
    resources: [desired('a', 1)],
    live: { deployments: [live('a', 'id-a'), live('b', 'id-b'), live('c', 'id-c')] },
  };

  it('what the empty file declared before is unknown and not deleted; what another file declared is deleted beside it', () => {
    const applied = new Map([
      ['Deployment/a', owned('id-a', 'created', { file: 'a.yaml' })],
      ['Deployment/b', owned('id-b', 'created', { file: 'b.yaml' })],
      ['Deployment/c', owned('id-c', 'created', { file: 'c.yaml' })],
    ]);
    const result = plan(input({ ...base, applied, prune: PRUNE, unseenFiles: [emptied('b.yaml')] }));
    expect(result.changes.find((c) => c.name === 'b')).toMatchObject({ action: 'blocked', unknown: true });
    expect(result.changes.find((c) => c.name === 'b')!.reason).toContain(
      'unknown: b.yaml:1:1 declares nothing now, which declared it before',
    );
    // c's file is gone for good (its record names c.yaml, which is absent): the empty b.yaml does not hold it back.
    expect(result.changes.filter((c) => c.action === 'delete').map((c) => c.name)).toEqual(['c']);
    expect(result.prune_refused).toBeUndefined();
    expect(result.notes).toContain(
      'prune deletes only what is known to be removed: b.yaml:1:1 declares nothing; a file that is present but empty may be one caught while it is written, so the owned resource it declared before is unknown, not deleted; delete the file to remove its resources, or restore its content',
    );
    // b stays blocked: the plan is not converged.
    expect(planExitCode(result, true)).toBe(1);
    // The empty file alone (nothing else to delete): prune refused, as before.
    const alone = plan(
      input({
        ...base,
        applied: new Map([...applied].filter(([key]) => key !== 'Deployment/c')),
        live: { deployments: [live('a', 'id-a'), live('b', 'id-b')] },
        prune: PRUNE,
        unseenFiles: [emptied('b.yaml')],
      }),
    );
    expect(alone.prune_refused).toContain('prune refused, nothing is deleted: b.yaml:1:1 declares nothing');
    // The empty file gone: c (removed cleanly) and b are deleted.
    const removed = plan(input({ ...base, applied, prune: PRUNE }));
    expect(removed.changes.filter((c) => c.action === 'delete').map((c) => c.name)).toEqual(['b', 'c']);
  });

  it('a path that could not be read is unknown as an empty file is: named with what it is, only what it declared is kept', () => {
    const applied = new Map([
      ['Deployment/a', owned('id-a', 'created', { file: 'a.yaml' })],
      ['Deployment/b', owned('id-b', 'created', { file: 'b.yaml' })],
      ['Deployment/c', owned('id-c', 'created', { file: 'c.yaml' })],
    ]);
    const link: UnseenFile = {
      file: 'b.yaml',
      what: 'is a symbolic link whose target does not exist',
      fix: 'restore its target, or delete the link to remove its resources',
    };
    const result = plan(input({ ...base, applied, prune: PRUNE, unseenFiles: [link] }));
    expect(result.changes.find((c) => c.name === 'b')).toMatchObject({ action: 'blocked', unknown: true });
    expect(result.changes.find((c) => c.name === 'b')!.reason).toBe(
      'unknown: b.yaml:1:1 is a symbolic link whose target does not exist, which declared it before; what could not be read is unknown, never absent, so it is neither deleted nor released while that path stays so: restore its target, or delete the link to remove its resources',
    );
    expect(result.changes.filter((c) => c.action === 'delete').map((c) => c.name)).toEqual(['c']);
    // Only b to delete: refused, naming the path and what it is.
    const alone = plan(
      input({
        ...base,
        live: { deployments: [live('a', 'id-a'), live('b', 'id-b')] },
        applied,
        prune: PRUNE,
        unseenFiles: [
          {
            file: 'b.yaml',
            what: 'is a directory',
            fix: 'give the folder another name (its files are still read), or put the manifest file back',
          },
        ],
      }),
    );
    expect(alone.changes.some((c) => c.action === 'delete')).toBe(false);
    expect(alone.prune_refused).toBe(
      'prune refused, nothing is deleted: b.yaml:1:1 is a directory; nothing could be read where a manifest was, which is not a removal, so the owned resource it declared before is unknown, not deleted; give the folder another name (its files are still read), or put the manifest file back',
    );
    expect(planExitCode(alone, true)).toBe(1);
  });

  it('a record that names no file is unknown while any file is empty (converge cannot tell which declared it); without one, deleted', () => {
    const applied = new Map([
      ['Deployment/a', owned('id-a')],
      ['Deployment/c', owned('id-c')],
    ]);
    const result = plan(
      input({
        ...base,
        live: { deployments: [live('a', 'id-a'), live('c', 'id-c')] },
        applied,
        prune: PRUNE,
        unseenFiles: [emptied('x.yaml')],
      }),
    );
    expect(result.changes.find((c) => c.name === 'c')!.reason).toContain(
      'unknown: x.yaml:1:1 declares nothing now, and converge has no record of which file declared it',
    );
    expect(result.changes.some((c) => c.action === 'delete')).toBe(false);
    expect(result.prune_refused).toBeDefined();
    const known = plan(
      input({
        ...base,
        live: { deployments: [live('a', 'id-a'), live('c', 'id-c', {})] },
        applied: new Map([...applied, ['Deployment/c', owned('id-c', 'created', { file: 'c.yaml' })]]),
        prune: PRUNE,
        unseenFiles: [emptied('x.yaml')],
      }),
    );
    expect(known.changes.find((c) => c.name === 'c')).toMatchObject({ action: 'delete', id: 'id-c' });
  });
});
