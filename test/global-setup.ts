// Test-run setup: checks Redis answers, gives this run its own key prefix, builds src/ once for child
// processes, and removes the run's Redis keys and build afterwards.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, rm, symlink, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { Redis } from 'ioredis';

const ROOT = resolve(import.meta.dirname, '..');

/**
 * Compiles src/ into node_modules/.cache/converge-test/<run>/dist (inside the project so node finds the
 * dependencies) with config/ beside it, so child processes run the code under test as `node <dist>/cli/main.js`.
 */
async function buildForChildProcesses(run: string): Promise<string> {
  const base = join(ROOT, 'node_modules', '.cache', 'converge-test', run);
  const dist = join(base, 'dist');
  await mkdir(base, { recursive: true });
  const tsc = join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
  const output = await new Promise<string>((done) => {
    const child = spawn(process.execPath, [tsc, '-p', join(ROOT, 'tsconfig.build.json'), '--outDir', dist], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    let text = '';
    child.stdout.on('data', (c: Buffer) => (text += c.toString()));
    child.stderr.on('data', (c: Buffer) => (text += c.toString()));
    child.on('close', () => done(text));
  });
  if (!existsSync(join(dist, 'cli', 'main.js'))) throw new Error(`build for child processes failed:\n${output.slice(0, 2000)}`);
  await writeFile(join(base, 'package.json'), '{ "type": "module" }\n');
  await symlink(join(ROOT, 'config'), join(base, 'config'));
  return dist;
}

export async function setup(): Promise<() => Promise<void>> {
  const url = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
  const run = randomBytes(4).toString('hex');
  const prefix = `{cvt-${run}}`;
  process.env.CONVERGE_TEST_REDIS_URL = url;
  process.env.CONVERGE_TEST_PREFIX = prefix;
  const redis = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 1, enableOfflineQueue: false });
  try {
    await redis.connect();
    await redis.ping();
  } catch (error) {
    throw new Error(`tests need Redis at ${url} (set REDIS_URL): ${(error as Error).message}`);
  } finally {
    redis.disconnect();
  }
  const dist = await buildForChildProcesses(run);
  process.env.CONVERGE_TEST_DIST = dist;
  return async () => {
    await rm(resolve(dist, '..'), { recursive: true, force: true });
    const cleaner = new Redis(url, { maxRetriesPerRequest: 1 });
    let cursor = '0';
    do {
      const [next, keys] = await cleaner.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
      cursor = next;
      if (keys.length) await cleaner.del(...keys);
    } while (cursor !== '0');
    cleaner.disconnect();
  };
}
