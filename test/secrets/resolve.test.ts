// Secret resolution: env and file sources, errors that never hold a value, hashes, redaction.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { inspect } from 'node:util';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { SecretResolutionError } from '../../src/core/errors.js';
import { secretHash } from '../../src/core/hash.js';
import type { DeploymentResource, ProviderResource } from '../../src/core/model.js';
import {
  MAX_SECRET_FILE_BYTES,
  hashDesiredSecrets,
  resolveDesiredSecrets,
  resolveSecretValue,
  secretDiagnostics,
} from '../../src/secrets/resolve.js';

const VALUE = 'sk-test-7f3a9c1e-planted';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'converge-secrets-'));
});
afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

function thrown(fn: () => unknown): SecretResolutionError {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(SecretResolutionError);
    return error as SecretResolutionError;
  }
  throw new Error('expected a SecretResolutionError');
}

const deployment: DeploymentResource = {
  kind: 'Deployment',
  name: 'support-agent',
  location: { file: 'apps/a.yaml', line: 4, column: 9 },
  suspend: false,
  spec: {
    source: 'internal_template',
    secrets: [
      { name: 'OPENAI_API_KEY', from: { env: 'T_OPENAI' } },
      { name: 'DB_PASSWORD', from: { env: 'T_MISSING' } },
    ],
  },
  secretLocations: {
    OPENAI_API_KEY: { file: 'apps/a.yaml', line: 10, column: 25 },
    DB_PASSWORD: { file: 'apps/a.yaml', line: 12, column: 25 },
  },
};

describe('resolveSecretValue', () => {
  it('reads an environment variable', () => {
    expect(resolveSecretValue({ env: 'T_OPENAI' }, { T_OPENAI: VALUE })).toBe(VALUE);
  });

  it('names a missing or empty variable, never a value', () => {
    expect(thrown(() => resolveSecretValue({ env: 'T_OPENAI' }, {})).message).toBe(
      'environment variable T_OPENAI is not set',
    );
    expect(thrown(() => resolveSecretValue({ env: 'T_OPENAI' }, { T_OPENAI: '' })).message).toBe(
      'environment variable T_OPENAI is empty',
    );
  });

  it('reads a file, trimming exactly one trailing newline, relative paths from baseDir', () => {
    writeFileSync(join(dir, 'one'), `${VALUE}\n`);
    writeFileSync(join(dir, 'crlf'), `${VALUE}\r\n`);
    writeFileSync(join(dir, 'two'), `${VALUE}\n\n`);
    writeFileSync(join(dir, 'none'), VALUE);
    expect(resolveSecretValue({ file: join(dir, 'one') }, {})).toBe(VALUE);
    expect(resolveSecretValue({ file: join(dir, 'crlf') }, {})).toBe(VALUE);
    expect(resolveSecretValue({ file: join(dir, 'two') }, {})).toBe(`${VALUE}\n`);
    expect(resolveSecretValue({ file: 'none' }, {}, { baseDir: dir })).toBe(VALUE);
  });

  it('names an unusable file, never its contents', () => {
    writeFileSync(join(dir, 'big'), VALUE.repeat(Math.ceil((MAX_SECRET_FILE_BYTES + 1) / VALUE.length)));
    writeFileSync(join(dir, 'empty'), '\n');
    writeFileSync(join(dir, 'binary'), Buffer.from([0x61, 0xff, 0xfe]));
    execFileSync('mkfifo', [join(dir, 'fifo')]);
    const messages = ['missing', 'big', 'empty', 'binary', 'fifo'].map(
      (name) => thrown(() => resolveSecretValue({ file: join(dir, name) }, {})).message,
    );
    expect(messages).toEqual([
      `secret file ${join(dir, 'missing')} does not exist`,
      `secret file ${join(dir, 'big')} is larger than 64 KiB`,
      `secret file ${join(dir, 'empty')} is empty`,
      `secret file ${join(dir, 'binary')} is not UTF-8 text`,
      `secret file ${join(dir, 'fifo')} is not a regular file`,
    ]);
    for (const message of messages) expect(message).not.toContain(VALUE);
  });

  it('returns a literal as written (only reachable with --allow-literal-secrets)', () => {
    expect(resolveSecretValue({ value: VALUE }, {})).toBe(VALUE);
  });
});

describe('hashDesiredSecrets and resolveDesiredSecrets', () => {
  it('hashes each resolvable secret under the resource key, and lists the others by name', () => {
    const result = hashDesiredSecrets(deployment, { T_OPENAI: VALUE });
    expect(result).toEqual({
      hashes: { OPENAI_API_KEY: secretHash('Deployment/support-agent', 'OPENAI_API_KEY', VALUE) },
      errors: [
        {
          name: 'DB_PASSWORD',
          message: 'secret DB_PASSWORD: environment variable T_MISSING is not set',
          unsetEnv: 'T_MISSING',
        },
      ],
      tooShort: [],
    });
    // A value too short to be masked safely is named (never its value): the plan warns at its reference.
    expect(hashDesiredSecrets(deployment, { T_OPENAI: 'x', T_MISSING: 'abcd' }).tooShort).toEqual(['OPENAI_API_KEY']);
    expect(JSON.stringify(result)).not.toContain(VALUE);
  });

  it("hashes a manual provider's client secret as client_secret; an MCP provider has none", () => {
    const manual: ProviderResource = {
      kind: 'OAuthProvider',
      name: 'slack',
      location: { file: 'p.yaml', line: 4, column: 9 },
      suspend: false,
      spec: {
        mode: 'manual',
        name: 'Slack',
        client_id: '1',
        auth_url: 'https://a.example',
        token_url: 'https://t.example',
        client_secret: { env: 'T_SLACK' },
      },
    };
    expect(hashDesiredSecrets(manual, { T_SLACK: VALUE }).hashes).toEqual({
      client_secret: secretHash('OAuthProvider/slack', 'client_secret', VALUE),
    });
    const mcp: ProviderResource = {
      ...manual,
      name: 'linear',
      spec: { mode: 'mcp', name: 'Linear', mcp_server_url: 'https://mcp.example.com' },
    };
    expect(hashDesiredSecrets(mcp, {})).toEqual({ hashes: {}, errors: [], tooShort: [] });
  });

  it('gives workers the values, in a record that prints and serializes as [redacted]', () => {
    const { values, errors } = resolveDesiredSecrets(deployment, { T_OPENAI: VALUE, T_MISSING: 'other-value' });
    expect(errors).toEqual([]);
    expect(values.OPENAI_API_KEY).toBe(VALUE);
    expect(Object.entries(values)).toEqual([
      ['OPENAI_API_KEY', VALUE],
      ['DB_PASSWORD', 'other-value'],
    ]);
    expect(JSON.stringify({ values })).toBe('{"values":"[redacted]"}');
    expect(inspect(values)).toBe('[redacted]');
    expect(`${inspect({ nested: values })}`).not.toContain(VALUE);
  });
});

describe('secretDiagnostics', () => {
  it('reports each unresolvable secret at the line of its reference', () => {
    expect(secretDiagnostics([deployment], { T_OPENAI: VALUE })).toEqual([
      {
        severity: 'error',
        file: 'apps/a.yaml',
        line: 12,
        column: 25,
        code: 'E_SECRET',
        message: 'Deployment/support-agent: secret DB_PASSWORD: environment variable T_MISSING is not set',
      },
    ]);
  });
});
