// The three-way rule, pure: field hashes, verdicts, what a write records, and the diff and plan notes built on them.
import { describe, expect, it } from 'vitest';
import type { AppliedRecord, DeploymentResource, DeploymentSpec, FieldHashes, LiveDeployment } from '../../model.js';
import { diffDeployment } from './diff.js';
import { declaredFieldPaths } from './fields.js';
import { answeredFieldHashes, compareField, fieldHash, normalisedNote, sentFieldHashes, valueAt } from './three-way.js';

const LISTENER = 'c4d5e6f7-0a1b-4c2d-8e3f-9a0b1c2d3e4f';

function record(sent: unknown, answered: unknown): FieldHashes {
  return { sent: fieldHash(sent), answered: fieldHash(answered) };
}

describe('fieldHash', () => {
  it('is 64 hex characters; absent and null hash alike, nulls inside objects are dropped, key order does not matter', () => {
    expect(fieldHash('x')).toMatch(/^[0-9a-f]{64}$/);
    expect(fieldHash(undefined)).toBe(fieldHash(null));
    expect(fieldHash({ k8s_namespace: 'agents', other: null })).toBe(fieldHash({ k8s_namespace: 'agents' }));
    expect(fieldHash({ a: 1, b: 2 })).toBe(fieldHash({ b: 2, a: 1 }));
    expect(fieldHash('1')).not.toBe(fieldHash(1));
    expect(fieldHash({})).not.toBe(fieldHash(null));
  });
});

describe('compareField', () => {
  const sent = { k8s_namespace: 'agents' };
  it('same when desired equals live, whatever the record says', () => {
    expect(compareField(sent, { k8s_namespace: 'agents' }, undefined)).toBe('same');
    expect(compareField(sent, { k8s_namespace: 'agents' }, record({ k8s_namespace: 'old' }, null))).toBe('same');
  });
  it('normalised when desired is what was sent and live is what was answered', () => {
    expect(compareField(sent, null, record(sent, null))).toBe('normalised');
    expect(
      compareField(
        'https://a.example.com',
        'https://svc.example.app',
        record('https://a.example.com', 'https://svc.example.app'),
      ),
    ).toBe('normalised');
  });
  it('changed without a record (no three-way knowledge: live state alone decides)', () => {
    expect(compareField(sent, null, undefined)).toBe('changed');
  });
  it('changed when desired moved on since the write', () => {
    expect(compareField({ k8s_namespace: 'agents-2' }, null, record(sent, null))).toBe('changed');
  });
  it('changed when live moved away from the answer (drift)', () => {
    expect(compareField(sent, { k8s_namespace: 'edited' }, record(sent, null))).toBe('changed');
  });
  it('uses the equality it is given (secret_references compare as a set)', () => {
    const setEqual = (a: unknown, b: unknown) =>
      JSON.stringify([...(a as string[])].sort()) === JSON.stringify([...(b as string[])].sort());
    expect(compareField(['a', 'b'], ['b', 'a'], undefined, setEqual)).toBe('same');
  });
});

describe('what a write records', () => {
  const spec: DeploymentSpec = {
    source: 'external_docker',
    source_config: {
      listener_id: LISTENER,
      listener_config: { k8s_namespace: 'agents' },
      install_command: 'pip install .',
      resource_spec: { max_scale: 3, cpu: 1 },
    },
    source_revision_config: { image_uri: 'registry.example.com/a:1' },
    secret_references: [{ name: 'DB', secret_name: 'db', secret_key: 'url' }],
  };

  it('declares one path per source_config field, per resource_spec field, per revision field, and secret_references', () => {
    expect(declaredFieldPaths(spec)).toEqual([
      'source_config.resource_spec.cpu',
      'source_config.resource_spec.max_scale',
      'source_config.listener_id',
      'source_config.listener_config',
      'source_config.install_command',
      'source_revision_config.image_uri',
      'secret_references',
    ]);
  });

  it('records, per path the body carries, the hash sent and the hash answered; paths not sent are not recorded', () => {
    const body = {
      source_config: {
        listener_config: { k8s_namespace: 'agents' },
        resource_spec: { max_scale: 3, cpu: 1, min_scale: 1 },
      },
    };
    const sent = sentFieldHashes(declaredFieldPaths(spec), body);
    expect(Object.keys(sent).sort()).toEqual([
      'source_config.listener_config',
      'source_config.resource_spec.cpu',
      'source_config.resource_spec.max_scale',
    ]);
    const answer = { source_config: { listener_config: null, resource_spec: { max_scale: 3, cpu: 1, min_scale: 1 } } };
    const recorded = answeredFieldHashes(sent, answer);
    expect(recorded['source_config.listener_config']).toEqual(record({ k8s_namespace: 'agents' }, null));
    expect(recorded['source_config.resource_spec.max_scale']).toEqual(record(3, 3));
    expect(JSON.stringify(recorded)).not.toContain('agents');
  });

  it('valueAt walks objects only', () => {
    expect(valueAt({ a: { b: 2 } }, 'a.b')).toBe(2);
    expect(valueAt({ a: [1] }, 'a.0')).toBeUndefined();
    expect(valueAt(null, 'a')).toBeUndefined();
  });

  it('the note shows the live values and says the field is not sent again', () => {
    expect(normalisedNote([{ path: 'source_config.listener_config', live: null }])).toBe(
      'the service reports source_config.listener_config as null, not as declared, since converge last wrote it: in sync, not sent again',
    );
  });
});

// ------------------------------------------------------------------ the rule inside diffDeployment

const ID = 'd2a4f6b8-1c3e-4a5b-9d7f-0a2c4e6f8b1d';

function resource(spec: DeploymentSpec): DeploymentResource {
  return {
    kind: 'Deployment',
    name: 'triage',
    location: { file: 'apps/triage.yaml', line: 1, column: 1 },
    suspend: false,
    spec,
  };
}

function triageSpec(): DeploymentSpec {
  return {
    source: 'codehost',
    source_config: {
      integration_id: '3f9d2c4e-1b7a-4e8f-9c61-2a5b7d0e4f13',
      repo_url: 'https://codehost.example.com/acme/triage',
      custom_url: 'https://triage.acme.example.com',
      listener_config: { k8s_namespace: 'agents' },
      install_command: 'pip install -e .',
      build_command: 'make build',
      resource_spec: { max_scale: 3, cpu: 1 },
    },
    source_revision_config: { repo_ref: 'main', graph_config_path: 'graph.json' },
  };
}

/** The deployment as the real service echoes the write of triageSpec(): commands and listener_config null, its own custom_url. */
function realEcho(
  patch: { resourceSpec?: Record<string, unknown>; revision?: Record<string, unknown> } = {},
): LiveDeployment {
  return {
    id: ID,
    tenant_id: '6c1f3a52-93e1-4c0e-9a55-0d8f2f1a7b21',
    name: 'triage',
    source: 'codehost',
    source_config: {
      integration_id: '3f9d2c4e-1b7a-4e8f-9c61-2a5b7d0e4f13',
      repo_url: 'https://codehost.example.com/acme/triage',
      custom_url: 'https://triage-d2a4f6b8.example.app',
      listener_config: null,
      install_command: null,
      build_command: null,
      resource_spec: patch.resourceSpec ?? { max_scale: 3, cpu: 1, min_scale: 1 },
    },
    source_revision_config: patch.revision ?? {
      repo_ref: 'main',
      graph_config_path: 'graph.json',
      repo_commit_sha: 'abc',
    },
    secrets: [],
    created_at: '2025-01-14T09:12:44.120Z',
    updated_at: '2025-02-03T16:40:02.881Z',
    status: 'READY',
    latest_revision_id: 'a1f0c9d2-7b3e-4c5a-8d6f-0e1b2c3d4e5f',
    active_revision_id: 'a1f0c9d2-7b3e-4c5a-8d6f-0e1b2c3d4e5f',
  };
}

/** The record a write of every declared field of `spec` answered by `answer` leaves. */
function recordOfWrite(spec: DeploymentSpec, answer: LiveDeployment): AppliedRecord {
  const body = {
    source_config: spec.source_config,
    source_revision_config: spec.source_revision_config,
    secret_references: spec.secret_references,
  };
  return {
    secrets: {},
    appliedAt: '2025-02-03T16:40:02.881Z',
    fields: answeredFieldHashes(sentFieldHashes(declaredFieldPaths(spec), body), answer),
  };
}

describe('diffDeployment with the three-way rule', () => {
  it('without a record (an older record or none) every unechoed field is a change, as before', () => {
    const diff = diffDeployment(resource(triageSpec()), realEcho(), {
      secretHashes: {},
      applied: { secrets: {}, appliedAt: 'x' },
    });
    expect(diff.change.action).toBe('update');
    expect(diff.change.fields.map((f) => f.path)).toEqual([
      'source_config.custom_url',
      'source_config.listener_config',
      'source_config.install_command',
      'source_config.build_command',
    ]);
  });

  it('after a write the service echoed in its own form: noop, a note with the live values, nothing sent', () => {
    const applied = recordOfWrite(triageSpec(), realEcho());
    const diff = diffDeployment(resource(triageSpec()), realEcho(), { secretHashes: {}, applied });
    expect(diff.change.action).toBe('noop');
    expect(diff.request).toBeUndefined();
    expect(diff.change.reason).toBe(
      'the service reports source_config.custom_url as "https://triage-d2a4f6b8.example.app", source_config.listener_config as null, source_config.install_command as null, source_config.build_command as null, not as declared, since converge last wrote them: in sync, not sent again',
    );
  });

  it('a field whose desired value changed since the write is sent again; the normalised others are not', () => {
    const applied = recordOfWrite(triageSpec(), realEcho());
    const spec = triageSpec();
    spec.source_config!.install_command = 'uv sync';
    const diff = diffDeployment(resource(spec), realEcho(), { secretHashes: {}, applied });
    expect(diff.change.action).toBe('update');
    expect(diff.change.fields).toEqual([
      { path: 'source_config.install_command', before: null, after: 'uv sync', sensitive: false },
    ]);
    expect(diff.request).toEqual({ op: 'patch', id: ID, body: { source_config: { install_command: 'uv sync' } } });
    expect(diff.change.new_revision).toBe(false);
  });

  it('a live value that moved away from the answer is drift', () => {
    const applied = recordOfWrite(triageSpec(), realEcho());
    const drifted = realEcho();
    drifted.source_config.custom_url = 'https://someone-else.example.com';
    const diff = diffDeployment(resource(triageSpec()), drifted, { secretHashes: {}, applied });
    expect(diff.change.fields.map((f) => f.path)).toEqual(['source_config.custom_url']);
  });

  it('a resource_spec field normalised by the service is not a change; when another changes the whole is sent with the declared values', () => {
    const answer = realEcho({ resourceSpec: { max_scale: 3, cpu: 1.0001, min_scale: 1 } });
    const applied = recordOfWrite(triageSpec(), answer);
    expect(diffDeployment(resource(triageSpec()), answer, { secretHashes: {}, applied }).change.action).toBe('noop');
    const spec = triageSpec();
    (spec.source_config!.resource_spec as Record<string, unknown>).max_scale = 5;
    const diff = diffDeployment(resource(spec), answer, { secretHashes: {}, applied });
    expect(diff.change.fields).toEqual([
      { path: 'source_config.resource_spec.max_scale', before: 3, after: 5, sensitive: false },
    ]);
    expect(diff.request?.body).toEqual({ source_config: { resource_spec: { min_scale: 1, max_scale: 5, cpu: 1 } } });
  });

  it('a revision field the service reports differently is not sent again (no rebuild loop)', () => {
    const answer = realEcho({ revision: { repo_ref: 'refs/heads/main', graph_config_path: 'graph.json' } });
    const applied = recordOfWrite(triageSpec(), answer);
    const diff = diffDeployment(resource(triageSpec()), answer, { secretHashes: {}, applied });
    expect(diff.change.action).toBe('noop');
    expect(diff.change.new_revision).toBe(false);
    expect(diff.change.reason).toContain('source_revision_config.repo_ref as "refs/heads/main"');
  });
});
