// --target, pure: the names select declared resources; the narrowed input plans those alone (no orphan, no prune).
import { describe, expect, it } from 'vitest';
import type { AppliedRecord, DeploymentResource, LiveDeployment, LiveProvider } from '../core/model.js';
import { partialPlanInput, selectTargets } from './partial.js';
import { plan, type PlanInput } from './plan.js';
import { renderText } from './render/text.js';

function live(name: string): LiveDeployment {
  return {
    id: `id-${name}`,
    name,
    source: 'external_docker',
    source_config: { resource_spec: { max_scale: 1 } },
    source_revision_config: { image_uri: `docker.io/acme/${name}:1` },
    secrets: [],
    created_at: '2026-01-01T00:00:00Z',
    updated_at: '2026-01-01T00:00:00Z',
    status: 'READY',
  };
}

function desired(name: string, maxScale: number): DeploymentResource {
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
  };
}

const provider: LiveProvider = {
  id: 'p-1',
  organization_id: 'o-1',
  provider_id: 'gone',
  name: 'Gone',
  client_id: 'c',
  auth_url: 'https://a.example',
  token_url: 'https://t.example',
  uses_pkce: true,
  code_challenge_method: 'S256',
  created_at: '2026-01-01T00:00:00Z',
  updated_at: '2026-01-01T00:00:00Z',
};
const record: AppliedRecord = { secrets: {}, appliedAt: '2026-01-02T00:00:00Z' };

function input(): PlanInput {
  return {
    resources: [desired('web', 2), desired('api', 1)],
    blocked: [
      {
        kind: 'Deployment',
        name: 'broken',
        location: { file: 'broken.yaml', line: 3, column: 1 },
        reason: 'broken.yaml:3:1: bad',
      },
    ],
    diagnostics: [],
    live: {
      deployments: [live('web'), live('api'), live('old')],
      providers: { readable: true, providers: [provider] },
    },
    applied: new Map([
      ['Deployment/web', record],
      ['Deployment/api', record],
      ['Deployment/old', record],
      ['OAuthProvider/gone', record],
    ]),
    secretHashes: new Map(),
    ownershipKnown: true,
    prune: { enabled: true, maxDeletes: 5, available: true, declared: 3 },
  };
}

describe('--target', () => {
  it('selects by name or Kind/name, once each, blocked resources included', () => {
    const declared = [...input().resources, ...input().blocked];
    expect(selectTargets(['web', 'Deployment/web', 'broken'], declared)).toEqual([
      'Deployment/web',
      'Deployment/broken',
    ]);
  });

  it('plans the targeted resources alone: no orphan, no delete (prune was on), the plan partial', () => {
    const whole = plan(input());
    expect(whole.summary).toMatchObject({ update: 1, delete: 2, blocked: 1 });
    const result = plan(partialPlanInput(input(), ['Deployment/web']));
    expect(result.changes.map((c) => `${c.action} ${c.kind}/${c.name}`)).toEqual(['update Deployment/web']);
    expect(result.targets).toEqual(['Deployment/web']);
    expect(result.prune_refused).toBeUndefined();
    expect(result.notes?.[0]).toContain('partial plan (--target): only Deployment/web is planned');
    const unchanged = plan(partialPlanInput(input(), ['Deployment/api']));
    expect(renderText(unchanged, { color: false })).toContain(
      'No changes. The targeted resources match their manifests.',
    );
  });
});
