// --allow-literal-secrets is for local use: `run` and `worker` refuse it with one line, `validate` takes it (the CLI in-process).
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCapture as runConverge } from '../helpers/cli.js';

/** A Redis nobody listens on: a refusal must come before any connection. */
const NO_REDIS = 'redis://127.0.0.1:1';

describe('--allow-literal-secrets', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'converge-literal-'));
    await writeFile(
      join(dir, 'app.yaml'),
      [
        'apiVersion: converge/v1',
        'kind: Deployment',
        'metadata:',
        '  name: app',
        'spec:',
        '  source: external_docker',
        '  source_revision_config:',
        '    image_uri: docker.io/acme/app:1',
        '  secrets:',
        '    - name: TOKEN',
        '      value: planted-literal-0c4d',
        '',
      ].join('\n'),
    );
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  function expectRefusal(result: { code: number; stdout: string; stderr: string }, command: string): void {
    expect(result.code).toBe(1);
    expect(result.stdout).toBe('');
    const lines = result.stderr.trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(new RegExp(`^converge ${command}: --allow-literal-secrets .*is for local use`));
    expect(lines[0]).toContain('validate, plan and apply');
    expect(lines[0]).toContain('valueFrom');
    expect(result.stderr).not.toContain('planted-literal-0c4d');
  }

  it('converge run refuses the flag, before it connects to anything', async () => {
    expectRefusal(
      await runConverge([
        'run',
        dir,
        '--allow-literal-secrets',
        '--api-url',
        'http://127.0.0.1:9',
        '--redis-url',
        NO_REDIS,
      ]),
      'run',
    );
  });

  it('converge run refuses it from the environment too', async () => {
    expectRefusal(
      await runConverge(['run', dir, '--api-url', 'http://127.0.0.1:9', '--redis-url', NO_REDIS], {
        CONVERGE_ALLOW_LITERAL_SECRETS: 'true',
      }),
      'run',
    );
  });

  it('converge worker refuses the flag', async () => {
    expectRefusal(
      await runConverge([
        'worker',
        '--allow-literal-secrets',
        '--api-url',
        'http://127.0.0.1:9',
        '--redis-url',
        NO_REDIS,
      ]),
      'worker',
    );
  });

  it('converge validate accepts it (local use), and without it names the literal as an error', async () => {
    const allowed = await runConverge(['validate', dir, '--allow-literal-secrets']);
    expect(allowed.code, allowed.stderr).toBe(0);
    const strict = await runConverge(['validate', dir]);
    expect(strict.code).toBe(1);
    expect(strict.stdout + strict.stderr).toContain('has a literal value in the manifest');
  });
});
