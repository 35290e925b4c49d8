// Counts this process's Redis traffic (every ioredis connection, BullMQ's included): commands and round trips.
import { createRequire } from 'node:module';
import { Redis } from 'ioredis';

const require = createRequire(import.meta.url);
const Pipeline = require('ioredis/built/Pipeline.js').default;

const BLOCKING = new Set(['bzpopmin', 'bzpopmax', 'brpoplpush', 'blmove', 'brpop', 'blpop', 'xread', 'xreadgroup']);

function fresh() {
  return {
    roundTrips: 0,
    commands: 0,
    pipelines: 0,
    blocking: 0,
    byName: new Map(),
    byOwner: { bullmq: 0, appliedState: 0 },
  };
}

let counts = fresh();
let installed = false;

function owner(command) {
  for (const arg of command.args ?? []) {
    if (typeof arg === 'string' && (arg.endsWith(':applied') || arg.endsWith(':pending'))) return 'appliedState';
  }
  return 'bullmq';
}

/**
 * Patches ioredis once: every command counts, a command outside a pipeline is one round trip, a pipeline (or
 * MULTI/EXEC) is one round trip whatever it holds. Blocking reads (BZPOPMIN, XREAD BLOCK) are counted apart:
 * they are waits for work, not per-job costs.
 */
export function installRedisCounter() {
  if (installed) return;
  installed = true;
  const send = Redis.prototype.sendCommand;
  Redis.prototype.sendCommand = function countedSend(command, stream) {
    const name = String(command.name).toLowerCase();
    counts.commands++;
    counts.byName.set(name, (counts.byName.get(name) ?? 0) + 1);
    counts.byOwner[owner(command)]++;
    if (BLOCKING.has(name)) counts.blocking++;
    if (!stream) counts.roundTrips++;
    return send.apply(this, arguments);
  };
  const exec = Pipeline.prototype.exec;
  Pipeline.prototype.exec = function countedExec() {
    counts.roundTrips++;
    counts.pipelines++;
    return exec.apply(this, arguments);
  };
}

export function resetRedisCounter() {
  counts = fresh();
}

export function readRedisCounter() {
  return {
    ...counts,
    byName: Object.fromEntries([...counts.byName].sort((a, b) => b[1] - a[1])),
    byOwner: { ...counts.byOwner },
  };
}

/** Server-wide `INFO commandstats` calls (every client of this Redis, other processes included). */
export async function serverCommandCalls(redis) {
  const text = await redis.info('commandstats');
  let total = 0;
  for (const match of text.matchAll(/^cmdstat_[^:]+:calls=(\d+)/gm)) total += Number(match[1]);
  return total;
}
