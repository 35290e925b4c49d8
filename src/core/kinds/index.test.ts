// The table of kinds: each kind is found, its job payload holds no secret value and turns back, its fingerprint holds none.
import { describe, expect, it } from 'vitest';
import type { DeploymentResource, DesiredResource, ProviderResource, ResourceKind, SecretSource } from '../model.js';
import { JOB_OPERATIONS, JobResource, kindOf, kinds, type JobSecretSource } from './index.js';

const LITERAL = 'planted-literal-value-3c9e';
const CLIENT_LITERAL = 'planted-client-literal-8b21';

function deployment(): DeploymentResource {
  return {
    kind: 'Deployment',
    name: 'web',
    location: { file: 'apps/web.yaml', line: 1, column: 1 },
    suspend: false,
    spec: {
      source: 'external_docker',
      source_revision_config: { image_uri: 'docker.io/acme/web:1' },
      secrets: [
        { name: 'FROM_ENV', from: { env: 'WEB_TOKEN' } },
        { name: 'FROM_FILE', from: { file: '/run/secrets/web' } },
        { name: 'LITERAL', from: { value: LITERAL } },
      ],
    },
    secretLocations: { LITERAL: { file: 'apps/web.yaml', line: 12, column: 14 } },
  };
}

function provider(): ProviderResource {
  return {
    kind: 'OAuthProvider',
    name: 'slack',
    location: { file: 'providers/slack.yaml', line: 1, column: 1 },
    suspend: false,
    spec: { mode: 'manual', name: 'Slack', client_id: 'c', auth_url: 'https://a.example/a', token_url: 'https://a.example/t', client_secret: { value: CLIENT_LITERAL } },
  };
}

const EXAMPLES: Record<ResourceKind, () => DesiredResource> = { Deployment: deployment, OAuthProvider: provider };

/** Maps a job's secret source back as a worker holding the literal values would. */
function fromJob(literals: Record<string, string>) {
  return (source: JobSecretSource, name: string): SecretSource => {
    if ('env' in source) return { env: source.env };
    if ('file' in source) return { file: source.file };
    return { value: literals[name]! };
  };
}

describe('the table of kinds', () => {
  it('finds each kind under its own name, with operations of its own', () => {
    expect(Object.keys(kinds).sort()).toEqual(['Deployment', 'OAuthProvider']);
    for (const kind of Object.keys(kinds) as ResourceKind[]) expect(kindOf(kind).kind).toBe(kind);
    expect(kindOf('Deployment').listed).toBe(true);
    expect(kindOf('OAuthProvider').listed).toBe(false);
    const operations = Object.values(kinds).flatMap((module) => [...module.operations]);
    expect(new Set(operations).size).toBe(operations.length);
    expect([...JOB_OPERATIONS].sort()).toEqual(operations.sort());
    expect(kindOf('Deployment').operation(deployment(), 'create')).toBe('create-deployment');
    expect(kindOf('Deployment').operation(deployment(), 'update')).toBe('patch-deployment');
    expect(kindOf('OAuthProvider').operation(provider(), 'create')).toBe('create-provider');
  });

  it.each(Object.keys(EXAMPLES) as ResourceKind[])('%s: the job payload holds pointers, never a value, and turns back into the resource', (kind) => {
    const resource = EXAMPLES[kind]();
    const module = kindOf(kind);
    const payload = JobResource.parse(module.jobPayload(resource));
    const text = JSON.stringify(payload);
    expect(text).not.toContain(LITERAL);
    expect(text).not.toContain(CLIENT_LITERAL);
    const literals = Object.fromEntries(module.secretSources(resource).flatMap(({ name, from }) => ('value' in from ? [[name, from.value]] : [])));
    expect(Object.keys(literals)).toHaveLength(1);
    expect(module.fromJobPayload(payload, fromJob(literals))).toEqual(resource);
  });

  it('keeps the position of a literal in the pointer, and the schema refuses a value in place of a source', () => {
    const payload = JobResource.parse(kindOf('Deployment').jobPayload(deployment()));
    expect(payload.kind === 'Deployment' && payload.spec.secrets?.map((s) => s.from)).toEqual([
      { env: 'WEB_TOKEN' },
      { file: '/run/secrets/web' },
      { manifest: { file: 'apps/web.yaml', line: 12, column: 14 } },
    ]);
    for (const resource of [deployment(), provider()]) {
      expect(() => JobResource.parse(resource)).toThrow();
    }
  });

  it('names every declared secret source per kind', () => {
    expect(kindOf('Deployment').secretSources(deployment()).map((s) => s.name)).toEqual(['FROM_ENV', 'FROM_FILE', 'LITERAL']);
    expect(kindOf('OAuthProvider').secretSources(provider())).toEqual([{ name: 'client_secret', from: { value: CLIENT_LITERAL } }]);
    const mcp: ProviderResource = { ...provider(), spec: { mode: 'mcp', name: 'Linear', mcp_server_url: 'https://mcp.example/mcp' } };
    expect(kindOf('OAuthProvider').secretSources(mcp)).toEqual([]);
  });

  it.each(Object.keys(EXAMPLES) as ResourceKind[])('%s: the fingerprint ignores where the manifest is, follows the secret hashes, holds no value', (kind) => {
    const resource = EXAMPLES[kind]();
    const module = kindOf(kind);
    const hashes = { LITERAL: 'a'.repeat(64) };
    const fingerprint = module.fingerprint(resource, hashes);
    expect(fingerprint).toMatch(/^[0-9a-f]{64}$/);
    expect(module.fingerprint({ ...resource, location: { file: 'moved.yaml', line: 9, column: 1 } }, hashes)).toBe(fingerprint);
    expect(module.fingerprint(resource, { LITERAL: 'b'.repeat(64) })).not.toBe(fingerprint);
    // a literal value changes only through its hash: the fingerprint does not read the value itself
    const other = EXAMPLES[kind]();
    const changed = JSON.parse(JSON.stringify(other).replaceAll(LITERAL, 'other').replaceAll(CLIENT_LITERAL, 'other')) as DesiredResource;
    expect(module.fingerprint(changed, hashes)).toBe(fingerprint);
  });
});
