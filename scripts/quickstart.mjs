// Quick start: finds or starts Redis, serves the emulator seeded from examples/, then validates, plans and applies examples/manifests.
import { spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createServer, connect } from 'node:net';
import { fileURLToPath } from 'node:url';
import { dirname, join } from 'node:path';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const cli = join(root, 'dist/cli/main.js');
const manifests = join(root, 'examples/manifests');
const seed = join(root, 'examples/emulator-state.yaml');

/** Demo values for the secrets examples/manifests reads from the environment (see examples/manifests/README.md). */
const DEMO_SECRETS = {
  EXAMPLE_OPENAI_API_KEY: 'demo-openai-key',
  EXAMPLE_ANTHROPIC_API_KEY: 'demo-anthropic-key',
  EXAMPLE_STRIPE_API_KEY: 'demo-stripe-key',
  EXAMPLE_SALESFORCE_TOKEN: 'demo-salesforce-token',
  EXAMPLE_SLACK_BOT_TOKEN: 'demo-slack-bot-token',
  EXAMPLE_SLACK_CLIENT_SECRET: 'demo-slack-client-secret',
};

function redisAnswers(url) {
  return new Promise((resolve) => {
    const parsed = new URL(url);
    const socket = connect(Number(parsed.port || 6379), parsed.hostname || '127.0.0.1');
    const done = (ok) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(1000, () => done(false));
    socket.on('error', () => done(false));
    socket.on('connect', () => socket.write('PING\r\n'));
    socket.on('data', (data) => done(String(data).startsWith('+PONG')));
  });
}

function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

/** REDIS_URL, else 127.0.0.1:6379, else a redis-server started here on a free port. */
async function ensureRedis() {
  const candidates = process.env.REDIS_URL ? [process.env.REDIS_URL] : ['redis://127.0.0.1:6379'];
  for (const url of candidates) if (await redisAnswers(url)) return { url, stop: () => {} };
  if (process.env.REDIS_URL) {
    throw new Error(`Redis at REDIS_URL (${process.env.REDIS_URL}) does not answer; start it or unset REDIS_URL`);
  }
  if (spawnSync('redis-server', ['--version'], { stdio: 'ignore' }).status !== 0) {
    throw new Error(
      'no Redis answers on 127.0.0.1:6379 and redis-server is not installed: install it (apt-get install redis-server, brew install redis) or set REDIS_URL',
    );
  }
  const port = await freePort();
  const child = spawn(
    'redis-server',
    ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
    { stdio: 'ignore' },
  );
  const url = `redis://127.0.0.1:${port}`;
  for (let i = 0; i < 50 && !(await redisAnswers(url)); i++) await new Promise((r) => setTimeout(r, 100));
  if (!(await redisAnswers(url))) throw new Error(`started redis-server on port ${port} but it does not answer`);
  console.log(`started redis-server on ${url} for this run`);
  return { url, stop: () => child.kill('SIGTERM') };
}

/** Runs the converge binary as a child (asynchronously: the emulator in this process must keep answering). */
function converge(args, env) {
  console.log(`\n$ converge ${args.join(' ')}`);
  return new Promise((resolve) => {
    // No terminal on stdin: nobody answers here, so `apply` writes without asking (docs/commands.md, "Approving on a terminal").
    const child = spawn(process.execPath, [cli, ...args], { stdio: ['ignore', 'inherit', 'inherit'], env });
    child.on('exit', (code) => resolve(code ?? 1));
  });
}

async function main() {
  const redis = await ensureRedis();
  const { startEmulator } = await import(join(root, 'dist/emulator/server.js'));
  const emulator = await startEmulator({ seedFile: seed, buildMs: 1500 });
  const prefix = `{converge-quickstart-${randomBytes(3).toString('hex')}}`;
  // converge has no default service: the quick start names its emulator explicitly.
  const env = {
    ...process.env,
    ...DEMO_SECRETS,
    REDIS_URL: redis.url,
    CONVERGE_REDIS_PREFIX: prefix,
    CONVERGE_API_URL: emulator.url,
  };
  console.log(`emulator of the service on ${emulator.url}, seeded from examples/emulator-state.yaml`);
  let failed = false;
  try {
    failed ||= (await converge(['validate', manifests], env)) !== 0;
    failed ||= (await converge(['plan', manifests], env)) !== 0;
    failed ||= (await converge(['apply', manifests, '--wait', '--wait-timeout', '1m'], env)) !== 0;
    const again = await converge(['plan', manifests, '--detailed-exitcode'], env);
    failed ||= again !== 0;
    console.log(
      failed
        ? '\nquick start: something did not converge (see above)'
        : '\nquick start: converged; a second plan finds nothing to change',
    );
  } finally {
    await emulator.close();
    const { Redis } = await import('ioredis');
    const client = new Redis(redis.url, { maxRetriesPerRequest: 1 });
    let cursor = '0';
    do {
      const [next, keys] = await client.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
      cursor = next;
      if (keys.length) await client.del(...keys);
    } while (cursor !== '0');
    client.disconnect();
    redis.stop();
  }
  process.exitCode = failed ? 1 : 0;
}

main().catch((error) => {
  console.error(`quick start: ${error.message}`);
  process.exitCode = 1;
});
