// Starts the emulator in its own process (lib/emulator-host.mjs) and talks to it: request counts, PATCH arrivals.
import { fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const HOST = fileURLToPath(new URL('./emulator-host.mjs', import.meta.url));

/**
 * Starts an emulator child seeded with N bench deployments. Returns { url, stats(), reset(), onRequest(), stop() }.
 * stats().requests counts every request since the last reset by "METHOD /route"; writes = POST + PATCH.
 */
export async function startEmulatorChild({ n, latencyMs, secrets = 'plain', buildMs = 0, pageCap }) {
  // BENCH_EMULATOR_PROF=DIR writes a CPU profile of the emulator process there (node --cpu-prof).
  const execArgv = process.env.BENCH_EMULATOR_PROF
    ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_EMULATOR_PROF}`]
    : [];
  const child = fork(HOST, [], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'], execArgv });
  const waiting = [];
  const listeners = new Set();
  let streaming = 'none';
  let exited = false;
  child.on('exit', () => {
    exited = true;
    for (const w of waiting.splice(0)) w.reject(new Error('the emulator child exited'));
  });
  child.on('message', (message) => {
    if (message.type === 'request') {
      for (const listener of listeners) listener(message);
      return;
    }
    const index = waiting.findIndex((w) => w.type === message.type || message.type === 'error');
    if (index === -1) return;
    const [w] = waiting.splice(index, 1);
    if (message.type === 'error') w.reject(new Error(`emulator child: ${message.message}`));
    else w.resolve(message);
  });
  function ask(message, reply = message.type) {
    if (exited) return Promise.reject(new Error('the emulator child exited'));
    return new Promise((resolve, reject) => {
      waiting.push({ type: reply, resolve, reject });
      child.send(message);
    });
  }
  const ready = await ask({ type: 'start', n, latencyMs, secrets, buildMs, pageCap }, 'ready');
  return {
    url: ready.url,
    pid: child.pid,
    seedMs: ready.seedMs,
    /** Counts since the last reset; waits `settleMs` first so requests still inside the added latency are recorded. */
    async stats(settleMs = latencyMs * 2 + 30) {
      await new Promise((resolve) => setTimeout(resolve, settleMs));
      const { counts, cpu } = await ask({ type: 'stats' });
      const total = Object.values(counts).reduce((a, b) => a + b, 0);
      const writes = Object.entries(counts)
        .filter(([key]) => key.startsWith('POST') || key.startsWith('PATCH'))
        .reduce((a, [, v]) => a + v, 0);
      const get = (key) => counts[key] ?? 0;
      return {
        counts,
        total,
        writes,
        list: get('GET /v2/deployments'),
        patch: get('PATCH /v2/deployments/{deployment_id}'),
        cpu,
      };
    },
    async reset() {
      await ask({ type: 'reset' });
    },
    /**
     * Calls `listener({ at, method, route, id, status })` for every request (what: 'all') or every PATCH, as the
     * emulator records it; `at` is Date.now() when it arrived, before the added latency. Returns an unsubscribe.
     */
    async onRequest(listener, what = 'all') {
      listeners.add(listener);
      if (streaming !== 'all' && streaming !== what) {
        streaming = what;
        await ask({ type: 'stream', what });
      }
      return async () => {
        listeners.delete(listener);
        if (listeners.size === 0 && !exited) {
          streaming = 'none';
          await ask({ type: 'stream', what: 'none' });
        }
      };
    },
    async stop() {
      if (exited) return;
      const gone = new Promise((resolve) => child.once('exit', resolve));
      child.send({ type: 'stop' });
      const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
      await gone;
      clearTimeout(timer);
    },
  };
}
