// `plan --applied-state-url` in-process against the emulator and a loopback stand-in for the daemon's GET /applied-state:
// which request it sends (path, token), that it reads no Redis, and each refusal and failure as one line (exit 1).
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtemp, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startEmulator, type RunningEmulator } from '../../src/emulator/server.js';
import { runCapture } from '../helpers/cli.js';
import { deploymentYaml, externalDockerSpec } from '../helpers/manifests.js';

const TOKEN = 'state-token-cli-4Nd8';
const EMPTY = { format: 'converge-applied-state', format_version: 1, records: {}, holds: {} };

let emulator: RunningEmulator;
let daemon: Server;
let daemonUrl: string;
let dir: string;
let answer: { status: number; body: unknown };
const asked: string[] = [];

beforeAll(async () => {
  emulator = await startEmulator({ buildMs: 0 });
  daemon = createServer((req, res) => {
    asked.push(`${req.method} ${req.url} ${req.headers.authorization ?? '-'}`);
    res.writeHead(answer.status, { 'content-type': 'application/json' }).end(JSON.stringify(answer.body));
  });
  await new Promise<void>((resolve) => daemon.listen(0, '127.0.0.1', resolve));
  daemonUrl = `http://127.0.0.1:${(daemon.address() as AddressInfo).port}`;
  dir = await mkdtemp(join(tmpdir(), 'converge-plan-asu-'));
  await writeFile(join(dir, 'a.yaml'), deploymentYaml('asu-cli', externalDockerSpec('docker.io/acme/asu-cli:1', 1)));
});

afterAll(async () => {
  await emulator.close();
  await new Promise((resolve) => daemon.close(resolve));
  await rm(dir, { recursive: true, force: true });
});

beforeEach(() => {
  asked.length = 0;
  answer = { status: 200, body: EMPTY };
});

function plan(args: string[], env: NodeJS.ProcessEnv = {}) {
  return runCapture(['plan', dir, '--api-url', emulator.url, ...args], { CONVERGE_STATE_TOKEN: TOKEN, ...env });
}

/** Exit 1, one line on stderr matching `line`, the token never shown. */
function expectOneLine(run: { code: number; stderr: string }, line: RegExp): void {
  expect(run.code, run.stderr).toBe(1);
  expect(run.stderr.trim().split('\n'), run.stderr).toHaveLength(1);
  expect(run.stderr).toMatch(line);
  expect(run.stderr).not.toContain(TOKEN);
}

describe('plan --applied-state-url', () => {
  it('asks GET /applied-state under the URL given, with the token, and reads no Redis (REDIS_URL left unread)', async () => {
    const run = await plan([], {
      CONVERGE_APPLIED_STATE_URL: `${daemonUrl}/converge/`,
      REDIS_URL: 'redis://127.0.0.1:1',
    });
    expect(run.code, run.stderr).toBe(0);
    expect(asked).toEqual([`GET /converge/applied-state Bearer ${TOKEN}`]);
    expect(run.stdout).toContain('asu-cli');
    const whole = await plan(['--applied-state-url', `${daemonUrl}/applied-state?x=1`]);
    expect(whole.code, whole.stderr).toBe(0);
    expect(asked[1]).toBe(`GET /applied-state Bearer ${TOKEN}`);
  });

  it('refuses --redis-url, --redis-prefix or --no-applied-state beside it, before any request', async () => {
    expectOneLine(
      await plan(['--applied-state-url', daemonUrl, '--redis-url', 'redis://127.0.0.1:6379']),
      /--redis-url cannot be given with --applied-state-url: the plan reads the applied state from the daemon's endpoint, not from Redis/,
    );
    expectOneLine(
      await plan(['--redis-prefix', 'p'], { CONVERGE_APPLIED_STATE_URL: daemonUrl }),
      /--redis-prefix cannot be given with CONVERGE_APPLIED_STATE_URL/,
    );
    expectOneLine(
      await plan(['--applied-state-url', daemonUrl, '--no-applied-state']),
      /--no-applied-state cannot be given with --applied-state-url/,
    );
    expect(asked).toEqual([]);
  });

  it('needs CONVERGE_STATE_TOKEN', async () => {
    expectOneLine(
      await plan(['--applied-state-url', daemonUrl], { CONVERGE_STATE_TOKEN: '' }),
      /--applied-state-url needs the daemon's read-only token in CONVERGE_STATE_TOKEN; it is not set/,
    );
    expect(asked).toEqual([]);
  });

  it('a refused token, an endpoint not enabled, a daemon not ready and an answer that is not the document: one line, exit 1, no plan saved', async () => {
    const file = join(dir, '..', `asu-${process.pid}.plan`);
    const cases: Array<[{ status: number; body: unknown }, RegExp]> = [
      [
        { status: 401, body: { error: 'missing or wrong token' } },
        /the token was refused \(401\); set CONVERGE_STATE_TOKEN to the value the daemon runs with/,
      ],
      [{ status: 404, body: { error: 'GET /applied-state is not enabled' } }, /404: the endpoint is not enabled there/],
      [
        { status: 503, body: { error: 'the daemon has not opened Redis yet; ask again in a moment' } },
        /it answered 503: the daemon has not opened Redis yet/,
      ],
      [
        { status: 200, body: { format: 'converge-plan' } },
        /it is not a converge applied-state document \(format "converge-plan"\)/,
      ],
      [
        {
          status: 200,
          body: { ...EMPTY, records: { 'Deployment/x': { secrets: { TOKEN: 'plain-value' }, appliedAt: 'now' } } },
        },
        /it is not an applied-state document this converge reads \(records\.Deployment\/x\.secrets\.TOKEN: /,
      ],
    ];
    for (const [reply, line] of cases) {
      answer = reply;
      const run = await plan(['--applied-state-url', daemonUrl, '--out', file]);
      expectOneLine(
        run,
        new RegExp(`^converge plan: cannot read the applied state from ${daemonUrl}/applied-state: ${line.source}`),
      );
      await expect(stat(file)).rejects.toThrow(/ENOENT/);
    }
  });
});
