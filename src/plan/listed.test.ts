// A deployment as the listing keeps it (src/core/kinds/deployment/listed.ts) is planned and decided as decoded.
import { describe, expect, it } from 'vitest';
import { listedDeployment } from '../core/kinds/deployment/listed.js';
import type { DeploymentResource, LiveDeployment } from '../core/model.js';
import { resourceKey } from '../core/model.js';
import { Deployment } from '../core/wire/schema.js';
import { decideOutcomes } from './outcomes.js';
import { plan, type PlanInput } from './plan.js';

/** A deployment decoded by the wire schema, with the fields a listing drops (tenant, commit, image, unknown ones). */
function decoded(name: string, extra: Record<string, unknown> = {}): LiveDeployment {
  return Deployment.parse({
    id: `id-${name}`,
    tenant_id: 'tenant-1',
    name,
    source: 'codehost',
    source_config: {
      integration_id: '5f64863e-b7a7-42ff-9061-df5ae08380de',
      repo_url: `https://codehost.example.com/acme/${name}`,
      build_on_push: true,
      custom_url: null,
      resource_spec: { min_scale: 1, max_scale: 3 },
      deployment_type: 'dev',
    },
    source_revision_config: { repo_ref: 'main', graph_config_path: 'langgraph.json', repo_commit_sha: 'b0d4e445' },
    secrets: [{ name: 'OPENAI_API_KEY', value: null }],
    created_at: '2026-01-01T00:00:00Z',
    updated_at: '2026-01-02T00:00:00Z',
    status: 'READY',
    latest_revision_id: 'r-2',
    active_revision_id: 'r-1',
    image_version: '0.2.1',
    display_name: name,
    ...extra,
  });
}

function desired(name: string, maxScale: number, repoRef = 'main'): DeploymentResource {
  return {
    kind: 'Deployment',
    name,
    location: { file: `${name}.yaml`, line: 1, column: 1 },
    suspend: false,
    spec: {
      source: 'codehost',
      source_config: {
        integration_id: '5f64863e-b7a7-42ff-9061-df5ae08380de',
        repo_url: `https://codehost.example.com/acme/${name}`,
        resource_spec: { min_scale: 1, max_scale: maxScale },
      },
      source_revision_config: { repo_ref: repoRef, graph_config_path: 'langgraph.json' },
      secrets: [{ name: 'OPENAI_API_KEY', from: { env: 'KEY' } }],
    },
  };
}

describe('a listed deployment', () => {
  it('gives the same plan and the same decisions as the decoded deployment it was kept from', () => {
    const live = [
      decoded('web'),
      decoded('api', { secret_references: [{ name: 'DB', secret_name: 'db', secret_key: 'url' }] }),
      decoded('preview', { is_preview: true }),
      decoded('going', { status: 'AWAITING_DELETE' }),
      decoded('stray'),
    ];
    const resources = [desired('web', 3), desired('api', 5, 'release'), desired('preview', 4), desired('going', 2)];
    const text = new Map<string, string>();
    const listed = live.map((d) => listedDeployment(d, text));
    const input = (deployments: PlanInput['live']['deployments']): PlanInput => ({
      resources,
      blocked: [],
      diagnostics: [],
      live: { deployments },
      applied: new Map(),
      secretHashes: new Map(resources.map((r) => [resourceKey(r.kind, r.name), { OPENAI_API_KEY: 'h' }])),
    });
    const fromDecoded = plan(input(live));
    const fromListed = plan(input(listed));
    expect(fromListed).toEqual(fromDecoded);
    const actions = fromDecoded.changes.map((c) => c.action).sort();
    expect(actions).toEqual(['blocked', 'blocked', 'orphan', 'update', 'update']);
    const decide = (deployments: PlanInput['live']['deployments'], result: typeof fromDecoded) =>
      decideOutcomes(result, {
        mode: 'daemon',
        resources: new Map(resources.map((r) => [resourceKey(r.kind, r.name), r])),
        live: deployments,
        revisions: new Map(),
        secretHashes: input(deployments).secretHashes,
        now: 0,
      }).outcomes;
    expect(decide(listed, fromListed)).toEqual(decide(live, fromDecoded));
  });
});
