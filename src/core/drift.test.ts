// Drift decisions and desired-state fingerprints.
import { describe, expect, it } from 'vitest';
import type { DeploymentResource, ProviderResource } from './model.js';
import { decideDrift } from './decide.js';
import { desiredFingerprint, driftReason } from './drift.js';

function deployment(
  maxScale: number,
  file = 'a.yaml',
  secret: { env: string } | { value: string } = { env: 'OPENAI_KEY' },
): DeploymentResource {
  return {
    kind: 'Deployment',
    name: 'web',
    location: { file, line: 1, column: 1 },
    suspend: false,
    spec: {
      source: 'internal_docker',
      source_config: { resource_spec: { max_scale: maxScale } },
      source_revision_config: { image_uri: 'registry.example.com/web:1' },
      secrets: [{ name: 'OPENAI_API_KEY', from: secret }],
    },
  };
}

describe('desiredFingerprint', () => {
  const hashes = { OPENAI_API_KEY: 'a'.repeat(64) };

  it('is stable when a manifest moves to another file, and changes with a field, an annotation or a secret value', () => {
    const base = desiredFingerprint(deployment(2), hashes);
    expect(desiredFingerprint(deployment(2, 'moved/b.yaml'), hashes)).toBe(base);
    expect(desiredFingerprint(deployment(3), hashes)).not.toBe(base);
    expect(desiredFingerprint({ ...deployment(2), driftPolicy: 'report' }, hashes)).not.toBe(base);
    expect(desiredFingerprint({ ...deployment(2), suspend: true }, hashes)).not.toBe(base);
    expect(desiredFingerprint(deployment(2), { OPENAI_API_KEY: 'b'.repeat(64) })).not.toBe(base);
  });

  it('taken again of the same resource object, is the one taken first, and follows the secret hashes it is given', () => {
    const resource = deployment(2);
    const first = desiredFingerprint(resource, hashes);
    expect(desiredFingerprint(resource, { ...hashes })).toBe(first);
    // A new value of the secret (same object, other hashes) is a new desired state; back to the first value, the first fingerprint.
    const rotated = desiredFingerprint(resource, { OPENAI_API_KEY: 'b'.repeat(64) });
    expect(rotated).not.toBe(first);
    expect(rotated).toBe(desiredFingerprint(deployment(2), { OPENAI_API_KEY: 'b'.repeat(64) }));
    expect(desiredFingerprint(resource, { OPENAI_API_KEY: 'a'.repeat(64), OTHER: 'c'.repeat(64) })).not.toBe(first);
    expect(desiredFingerprint(resource, {})).not.toBe(first);
    expect(desiredFingerprint(resource, hashes)).toBe(first);
  });

  it('does not depend on where a secret comes from, only on the hash of its value (a literal never enters the hash)', () => {
    const fromEnv = desiredFingerprint(deployment(2, 'a.yaml', { env: 'OPENAI_KEY' }), hashes);
    const literal = desiredFingerprint(deployment(2, 'a.yaml', { value: 'sk-planted-literal' }), hashes);
    expect(literal).toBe(fromEnv);
  });

  it('covers providers, without their client_secret source', () => {
    const provider = (secret: { env: string } | { value: string }): ProviderResource => ({
      kind: 'OAuthProvider',
      name: 'slack',
      location: { file: 'p.yaml', line: 1, column: 1 },
      suspend: false,
      spec: {
        mode: 'manual',
        name: 'Slack',
        client_id: '1',
        auth_url: 'https://a',
        token_url: 'https://t',
        client_secret: secret,
      },
    });
    expect(desiredFingerprint(provider({ env: 'X' }), {})).toBe(desiredFingerprint(provider({ value: 'planted' }), {}));
  });
});

describe('decideDrift', () => {
  it('applies a changed manifest under either policy, and heals or reports drift of an unchanged one', () => {
    expect(decideDrift(undefined, 'f1', 'report', 'create')).toEqual({ kind: 'apply' });
    expect(decideDrift(undefined, 'f1', 'heal')).toEqual({ kind: 'apply' });
    expect(decideDrift('f0', 'f1', 'report')).toEqual({ kind: 'apply' });
    expect(decideDrift('f0', 'f1', 'heal')).toEqual({ kind: 'apply' });
    expect(decideDrift('f1', 'f1', 'heal')).toEqual({ kind: 'heal' });
    expect(decideDrift('f1', 'f1', 'report')).toEqual({ kind: 'report' });
  });

  it('never reads a missing memory as a manifest change under report: an update is reported', () => {
    expect(decideDrift(undefined, 'f1', 'report')).toEqual({ kind: 'report' });
    expect(decideDrift(undefined, 'f1', 'report', 'update')).toEqual({ kind: 'report' });
  });
});

describe('driftReason', () => {
  it('names a change made outside converge: a replaced secret set, and when the service shows the write', () => {
    const applied = { secrets: {}, appliedAt: '2026-11-26T10:00:00.000Z' };
    expect(driftReason(['secrets.OPENAI_API_KEY'], { updated_at: '2026-11-26T11:00:00.000Z' }, applied)).toBe(
      "changed outside converge at 2026-11-26T11:00:00.000Z, after converge's last write at 2026-11-26T10:00:00.000Z: its secret set was replaced (declared secret OPENAI_API_KEY missing or different), as a client that sends its own complete environment does (the official deploy tool sends its .env)",
    );
    expect(
      driftReason(['source_config.resource_spec.max_scale'], { updated_at: '2026-11-26T09:00:00.000Z' }, applied),
    ).toBe('changed outside converge');
    expect(driftReason(['secrets.A', 'secrets.B', 'source_config.build_on_push'], undefined, undefined)).toMatch(
      /^changed outside converge: its secret set was replaced \(declared secrets A, B missing or different\)/,
    );
  });
});
