// Child process hosting the emulator (dist) for the benchmarks, so its CPU is not converge's; driven over IPC.
import { startEmulator } from '../../../dist/emulator/server.js';
import { benchSeed } from './fixtures.mjs';

let emulator;
let counts = new Map();
/** Which requests are streamed to the parent as they are recorded: none, 'PATCH', or 'all'. */
let stream = 'none';

function count(entry) {
  const key = `${entry.method} ${entry.route}`;
  counts.set(key, (counts.get(key) ?? 0) + 1);
  if (stream === 'all' || (stream === 'PATCH' && entry.method === 'PATCH')) {
    process.send({
      type: 'request',
      at: entry.at,
      method: entry.method,
      route: entry.route,
      id: entry.deploymentId,
      status: entry.status,
    });
  }
}

async function start(message) {
  const started = performance.now();
  emulator = await startEmulator({
    seed: benchSeed(message.n),
    latencyMs: message.latencyMs,
    secrets: message.secrets ?? 'plain',
    buildMs: message.buildMs ?? 0,
    pageCap: message.pageCap,
    requestLogLimit: 0,
    onRequest: count,
    onError: (error) => process.stderr.write(`emulator: ${error?.message ?? String(error)}\n`),
  });
  process.send({ type: 'ready', url: emulator.url, seedMs: performance.now() - started });
}

process.on('message', (message) => {
  switch (message.type) {
    case 'start':
      start(message).catch((error) => {
        process.send({ type: 'error', message: error?.message ?? String(error) });
      });
      break;
    case 'stats':
      process.send({ type: 'stats', counts: Object.fromEntries(counts), cpu: process.cpuUsage() });
      break;
    case 'reset':
      counts = new Map();
      process.send({ type: 'reset' });
      break;
    case 'stream':
      stream = message.what;
      process.send({ type: 'stream' });
      break;
    case 'stop':
      // process.exit() (not a signal) so a --cpu-prof profile is written.
      (emulator ? emulator.close() : Promise.resolve()).finally(() => process.exit(0));
      break;
    default:
      process.send({ type: 'error', message: `unknown message ${message.type}` });
  }
});
process.on('disconnect', () => process.exit(0));
