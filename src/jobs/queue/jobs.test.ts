// Job payloads: references, never values; job ids derived from the resource key.
import { describe, expect, it } from 'vitest';
import type { DeploymentResource, ProviderResource } from '../../core/model.js';
import { buildJobData, jobIdFor } from './jobs.js';

function deployment(
  name: string,
  maxScale: number,
  secretFrom: DeploymentResource['spec']['secrets'] = [],
): DeploymentResource {
  return {
    kind: 'Deployment',
    name,
    location: { file: 'apps/a.yaml', line: 1, column: 1 },
    suspend: false,
    spec: {
      source: 'external_docker',
      source_config: { resource_spec: { max_scale: maxScale } },
      source_revision_config: { image_uri: 'docker.io/a:1' },
      secrets: secretFrom,
    },
  };
}

describe('job payloads', () => {
  it('keep env and file references and replace a literal value by a pointer to its manifest', () => {
    const resource = deployment('a', 1, [
      { name: 'FROM_ENV', from: { env: 'SOME_VAR' } },
      { name: 'FROM_FILE', from: { file: '/run/secrets/x' } },
      { name: 'LITERAL', from: { value: 'planted-literal-7f3a' } },
    ]);
    const data = buildJobData(resource, 'create-deployment', { origin: 'test', write: { op: 'create', fields: [] } });
    const job = data.resource!;
    expect(job.kind === 'Deployment' && job.spec.secrets).toEqual([
      { name: 'FROM_ENV', from: { env: 'SOME_VAR' } },
      { name: 'FROM_FILE', from: { file: '/run/secrets/x' } },
      { name: 'LITERAL', from: { manifest: { file: 'apps/a.yaml', line: 1, column: 1 } } },
    ]);
    expect(JSON.stringify(data)).not.toContain('planted-literal-7f3a');
  });

  it('do the same for a provider client_secret', () => {
    const provider: ProviderResource = {
      kind: 'OAuthProvider',
      name: 'slack',
      location: { file: 'p.yaml', line: 3, column: 1 },
      suspend: false,
      spec: {
        mode: 'manual',
        name: 'Slack',
        client_id: 'c',
        auth_url: 'https://a',
        token_url: 'https://t',
        client_secret: { value: 'planted-client-secret' },
      },
    };
    const data = buildJobData(provider, 'create-provider', { origin: 'test', write: { op: 'create', fields: [] } });
    expect(JSON.stringify(data)).not.toContain('planted-client-secret');
    expect(data.resource!.kind === 'OAuthProvider' && data.resource!.spec.client_secret).toEqual({
      manifest: { file: 'p.yaml', line: 3, column: 1 },
    });
  });

  it('have job ids derived from the resource key, valid for BullMQ', () => {
    const id = jobIdFor('OAuthProvider/odd:name%');
    expect(id).not.toContain(':');
    expect(id.startsWith('OAuthProvider/odd%3Aname%25@')).toBe(true);
    expect(jobIdFor('OAuthProvider/odd:name%')).not.toBe(id);
  });
});
