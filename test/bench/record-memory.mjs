// The Redis memory of converge's record at N deployments (docs/daemon.md "Bounds and memory"): `converge run` reconciles
// N seeded deployments once, then every key under its prefix is measured with MEMORY USAGE, grouped by what it holds.
// Run after `npm run build`: node test/bench/record-memory.mjs [N] (default 10,000).
import { Redis } from 'ioredis';
import { dropBenchPrefix } from './lib/redis-prefix.mjs';
import { benchPrefix, REDIS_URL, removeDir, tempDir } from './lib/common.mjs';
import { startDaemonChild } from './lib/daemon-child.mjs';
import { startEmulatorChild } from './lib/emulator-child.mjs';
import { benchEnv, writeManifests } from './lib/fixtures.mjs';

/** The group of a key under the prefix: its name with the resource's part replaced. */
function groupOf(key, prefix) {
  const rest = key.slice(prefix.length + 1);
  if (rest.startsWith('record:history:')) return 'record:history:KIND/NAME';
  if (rest.startsWith('bull:')) return 'bull:* (the queue)';
  return rest;
}

async function measure(redis, prefix) {
  const groups = new Map();
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 1000);
    cursor = next;
    for (const key of keys) {
      const bytes = Number(await redis.call('MEMORY', 'USAGE', key, 'SAMPLES', '0'));
      const group = groupOf(key, prefix);
      const g = groups.get(group) ?? { keys: 0, bytes: 0 };
      g.keys += 1;
      g.bytes += bytes;
      groups.set(group, g);
    }
  } while (cursor !== '0');
  return groups;
}

async function main() {
  const n = Number(process.argv[2] ?? 10_000);
  const dir = await tempDir(`record-memory-${n}`);
  const prefix = benchPrefix('record-memory');
  const emulator = await startEmulatorChild({ n, latencyMs: 0, secrets: 'plain' });
  const redis = new Redis(REDIS_URL);
  let daemon;
  try {
    await writeManifests(dir, n);
    daemon = await startDaemonChild({ dir, apiUrl: emulator.url, prefix, env: benchEnv(), args: ['--resync', '1h'] });
    const startup = await daemon.waitFor((l) => l.msg === 'reconciled' && l.trigger === 'startup', 300_000);
    if (startup.files !== n) throw new Error(`the first reconcile read ${startup.files} files, not ${n}`);
    // The record is written after the reconcile's end: /status answers once the daemon's own writes are done.
    const status = await (await fetch(`${daemon.url}/status`)).json();
    if (status.resources.length !== n) throw new Error(`/status lists ${status.resources.length} resources, not ${n}`);
    console.log(
      `record:state holds ${await redis.hlen(`${prefix}:record:state`)} states; record:log ${await redis.xlen(`${prefix}:record:log`)} entries`,
    );
    const groups = await measure(redis, prefix);
    const rows = [...groups].sort((a, b) => b[1].bytes - a[1].bytes);
    const total = rows.reduce((sum, [, g]) => sum + g.bytes, 0);
    console.log(
      `Redis memory of prefix ${prefix} after the first reconcile of ${n} deployments (MEMORY USAGE, SAMPLES 0):`,
    );
    for (const [group, g] of rows)
      console.log(
        `${group.padEnd(40)} ${String(g.keys).padStart(7)} keys ${(g.bytes / 1024 / 1024).toFixed(2).padStart(9)} MB`,
      );
    console.log(`${'total'.padEnd(40)} ${' '.repeat(12)} ${(total / 1024 / 1024).toFixed(2).padStart(9)} MB`);
  } finally {
    await daemon?.stop();
    await emulator.stop();
    redis.disconnect();
    await dropBenchPrefix(prefix);
    await removeDir(dir);
  }
}

await main();
