// Level-triggered property: applying the minimal request to a model of the service's PATCH merge converges in one step.
import { describe, expect, it } from 'vitest';
import { SecretResolutionError } from '../../src/core/errors.js';
import type { AppliedRecord, DeploymentSpec, LiveDeployment } from '../../src/core/model.js';
import { diffDeployment, requestBody } from '../../src/core/kinds/deployment/index.js';
import type { PatchDeploymentRequest } from '../../src/core/wire/schema.js';
import {
  OPENAI_OLD_VALUE,
  OPENAI_VALUE,
  applied,
  desired,
  hashOf,
  supportAgentLive,
  supportAgentSpec,
} from './fixtures.js';

type Echo = 'plain' | 'masked' | 'omitted';

/** docs/against-the-real-service.md §3: top-level merge, nulls never clear, resource_spec replaced whole, secrets upserted by name. */
function servicePatch(stored: LiveDeployment, body: PatchDeploymentRequest): LiveDeployment {
  const next = structuredClone(stored);
  for (const [key, value] of Object.entries(body.source_config ?? {}))
    if (value !== null && value !== undefined) next.source_config[key] = value;
  for (const [key, value] of Object.entries(body.source_revision_config ?? {})) {
    if (value !== null && value !== undefined) next.source_revision_config[key] = value;
  }
  for (const secret of body.secrets ?? []) {
    const found = next.secrets.find((s) => s.name === secret.name);
    if (found) found.value = secret.value;
    else next.secrets.push({ ...secret });
  }
  if (body.secret_references) next.secret_references = body.secret_references;
  return next;
}

function echo(stored: LiveDeployment, mode: Echo): LiveDeployment {
  if (mode === 'plain') return stored;
  return {
    ...stored,
    secrets: stored.secrets.map((s) => (mode === 'masked' ? { name: s.name, value: '********' } : { name: s.name })),
  };
}

const VALUES = { OPENAI_API_KEY: OPENAI_VALUE };
const HASHES = { OPENAI_API_KEY: hashOf('support-agent', 'OPENAI_API_KEY', OPENAI_VALUE) };

function changed(mutate: (s: DeploymentSpec) => void): DeploymentSpec {
  const s = supportAgentSpec();
  mutate(s);
  return s;
}

const specs: Array<[string, DeploymentSpec]> = [
  [
    'max_scale and repo_ref',
    changed((s) => {
      (s.source_config!.resource_spec as Record<string, unknown>).max_scale = 6;
      s.source_revision_config!.repo_ref = 'release';
    }),
  ],
  ['build_on_push', changed((s) => (s.source_config!.build_on_push = false))],
  ['unchanged config, secret rotated', supportAgentSpec()],
];

describe('one request converges (a second diff is noop and sends nothing)', () => {
  for (const mode of ['plain', 'masked', 'omitted'] as const) {
    it.each(specs)(`%s, service echoes secrets ${mode}`, (_name, spec) => {
      const resource = desired('support-agent', spec);
      let stored = supportAgentLive({ secrets: [{ name: 'OPENAI_API_KEY', value: OPENAI_OLD_VALUE }] });
      const first = diffDeployment(resource, echo(stored, mode), { secretHashes: HASHES });
      expect(first.change.action).toBe('update');
      expect(first.request?.op).toBe('patch');
      stored = servicePatch(stored, requestBody(first, VALUES) as PatchDeploymentRequest);
      const record: AppliedRecord = applied(
        Object.fromEntries(first.secretNames.map((n) => [n, HASHES[n as 'OPENAI_API_KEY']])),
      );
      const second = diffDeployment(resource, echo(stored, mode), { secretHashes: HASHES, applied: record });
      expect(second).toStrictEqual({
        change: {
          kind: 'Deployment',
          name: 'support-agent',
          action: 'noop',
          new_revision: false,
          fields: [],
          reason: null,
        },
        secretNames: [],
      });
    });
  }
});

describe('requestBody', () => {
  const resource = desired('support-agent', supportAgentSpec());

  it('create always carries secrets, with the resolved values of exactly secretNames', () => {
    const diff = diffDeployment(resource, undefined, { secretHashes: HASHES });
    expect(requestBody(diff, { ...VALUES, UNRELATED: 'x' })).toStrictEqual({
      ...(diff.request!.body as object),
      secrets: [{ name: 'OPENAI_API_KEY', value: OPENAI_VALUE }],
    });
  });

  it('a PATCH without secret changes carries no secrets key (absent keeps the stored ones)', () => {
    const spec = changed((s) => (s.source_config!.build_on_push = false));
    const diff = diffDeployment(desired('support-agent', spec), supportAgentLive(), { secretHashes: HASHES });
    expect(requestBody(diff, VALUES)).toStrictEqual({ source_config: { build_on_push: false } });
  });

  it('noop has no body', () => {
    const diff = diffDeployment(resource, supportAgentLive(), { secretHashes: HASHES });
    expect(requestBody(diff, VALUES)).toBeUndefined();
  });

  it('a missing resolved value is a SecretResolutionError naming the secret, never a value', () => {
    const diff = diffDeployment(resource, undefined, { secretHashes: HASHES });
    expect(() => requestBody(diff, {})).toThrow(SecretResolutionError);
    expect(() => requestBody(diff, {})).toThrow(
      'secret OPENAI_API_KEY of Deployment/support-agent has no resolved value',
    );
  });
});
