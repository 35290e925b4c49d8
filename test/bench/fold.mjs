// The cost of folding a reconcile's N decisions into Redis (ResourceFolds.fold, src/store/resource-folds.ts): N
// first-time decisions (each writes a state, its version and its entries), then the same N again (nothing changed:
// nothing written), then every state read as /status reads the projection, by the process that folded them and by one
// that holds none (a standby). For each: this process' CPU time, wall time and garbage collections' time, Redis' CPU time (INFO
// cpu) and the commands it ran (INFO commandstats): give it a Redis of its own (REDIS_URL=redis://127.0.0.1:PORT).
// Run after `npm run build`: node test/bench/fold.mjs [N] (default 10,000).
import { PerformanceObserver } from 'node:perf_hooks';
import { decide } from '../../dist/core/decide.js';
import { leaseKey } from '../../dist/leader/lease.js';
import { closeRedis, connectProducer } from '../../dist/store/redis.js';
import { ResourceFolds } from '../../dist/store/resource-folds.js';
import { benchPrefix, REDIS_URL } from './lib/common.mjs';
import { dropBenchPrefix } from './lib/redis-prefix.mjs';

const FP = 'a'.repeat(64);

/** The decision of a daemon's reconcile on a deployment in sync (what a first reconcile decides of most). */
function decided(i) {
  const name = `app-${String(i).padStart(5, '0')}`;
  const live = {
    id: `d${i}`,
    name,
    status: 'READY',
    latest_revision_id: `r${i}`,
    active_revision_id: `r${i}`,
    created_at: '2026-01-01T00:00:00Z',
  };
  const change = { kind: 'Deployment', name, action: 'noop', new_revision: false, fields: [], reason: null };
  const outcome = decide({
    change,
    desired: { suspend: false },
    fingerprint: FP,
    live,
    settings: { mode: 'daemon', driftPolicy: 'heal' },
    remembered: FP,
  });
  const context = {
    file: `${name}.yaml`,
    planReason: null,
    drift: null,
    heldAtLastGood: false,
    deploymentId: live.id,
    desired: FP,
  };
  return { key: `Deployment/${name}`, events: [{ type: 'decided', outcome, context }] };
}

/** Redis' own CPU time so far (INFO cpu), in ms. */
async function redisCpu(redis) {
  const info = await redis.info('cpu');
  const field = (name) => Number(new RegExp(`^${name}:([\\d.]+)`, 'm').exec(info)?.[1] ?? 0);
  return (field('used_cpu_user') + field('used_cpu_sys')) * 1000;
}

/** The garbage collections' time in this process, summed by a PerformanceObserver. */
const gcTime = { ms: 0 };
new PerformanceObserver((list) => {
  for (const entry of list.getEntries()) gcTime.ms += entry.duration;
}).observe({ entryTypes: ['gc'] });

/** Redis' commandstats as a map of command -> {calls, usec}. */
async function commandStats(redis) {
  const out = new Map();
  for (const line of (await redis.info('commandstats')).split('\n')) {
    const m = /^cmdstat_([^:]+):calls=(\d+),usec=(\d+)/.exec(line);
    if (m) out.set(m[1], { calls: Number(m[2]), usec: Number(m[3]) });
  }
  return out;
}

async function phase(label, folds, probe, requests) {
  const before = await commandStats(probe);
  globalThis.gc?.();
  await new Promise((resolve) => setTimeout(resolve, 50));
  const redisBefore = await redisCpu(probe);
  const gcBefore = gcTime.ms;
  const cpu = process.cpuUsage();
  const start = performance.now();
  const outcomes = await folds.fold(requests, { fence: undefined });
  const wall = performance.now() - start;
  const used = process.cpuUsage(cpu);
  const gc = gcTime.ms - gcBefore;
  const redisUsed = (await redisCpu(probe)) - redisBefore;
  const after = await commandStats(probe);
  const byStatus = {};
  for (const o of outcomes) byStatus[o.status] = (byStatus[o.status] ?? 0) + 1;
  // Commands a script runs count under their own names too: the client's own commands are those outside scripts.
  const commands = [];
  for (const [name, stat] of after) {
    const was = before.get(name) ?? { calls: 0, usec: 0 };
    if (name === 'info' || stat.calls === was.calls) continue;
    commands.push(`${name} ${stat.calls - was.calls} (${((stat.usec - was.usec) / 1000).toFixed(0)} ms)`);
  }
  console.log(
    `${label}: ${JSON.stringify(byStatus)}; wall ${wall.toFixed(0)} ms, CPU ${((used.user + used.system) / 1000).toFixed(0)} ms, ` +
      `GC ${gc.toFixed(0)} ms; Redis CPU ${redisUsed.toFixed(0)} ms; commands: ${commands.join(', ')}`,
  );
}

/** One read of every state through ResourceFolds.states (what /status reads when the projection moved). */
async function projection(label, folds) {
  const parsed = folds.parsed;
  globalThis.gc?.();
  const heap = process.memoryUsage().heapUsed;
  const cpu = process.cpuUsage();
  const start = performance.now();
  const states = await folds.states();
  const wall = performance.now() - start;
  const used = process.cpuUsage(cpu);
  globalThis.gc?.();
  const held = process.memoryUsage().heapUsed - heap;
  console.log(
    `${label}: ${states.size} states, ${folds.parsed - parsed} parsed; wall ${wall.toFixed(0)} ms, CPU ${((used.user + used.system) / 1000).toFixed(0)} ms; ` +
      `heap held by the rows read (after gc) ${(held / 1e6).toFixed(1)} MB`,
  );
}

async function main() {
  const n = Number(process.argv[2] ?? 10_000);
  const prefix = benchPrefix('fold');
  const redis = await connectProducer({ redisUrl: REDIS_URL, redisPrefix: prefix });
  const probe = await connectProducer({ redisUrl: REDIS_URL, redisPrefix: prefix });
  try {
    const requests = Array.from({ length: n }, (_, i) => decided(i));
    const meta = { at: new Date().toISOString(), by: 'bench' };
    const folds = new ResourceFolds(redis, prefix, leaseKey(prefix));
    await phase(
      `${n} first-time decisions`,
      folds,
      probe,
      requests.map((r) => ({ ...r, meta })),
    );
    await phase(
      `${n} unchanged decisions`,
      folds,
      probe,
      requests.map((r) => ({ ...r, meta })),
    );
    await projection('the projection read by the leader that folded (its cache)', folds);
    await projection(
      'the projection read by a standby (nothing cached)',
      new ResourceFolds(probe, prefix, leaseKey(prefix)),
    );
    const versions = await probe.hgetall(`${prefix}:record:state-versions`);
    const bytes = Object.entries(versions).reduce((sum, [k, v]) => sum + k.length + v.length, 0);
    console.log(
      `the versions hash: ${Object.keys(versions).length} entries, ${(bytes / 1e6).toFixed(2)} MB of keys and values`,
    );
  } finally {
    await closeRedis(redis);
    await closeRedis(probe);
    await dropBenchPrefix(prefix);
  }
}

await main();
