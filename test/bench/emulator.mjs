// Figure 6 of issue 7: the emulator's throughput for list pages of 100, with the load generator in another process.
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { benchMain, figure, ms } from './lib/common.mjs';
import { startEmulatorChild } from './lib/emulator-child.mjs';

const LOADGEN = fileURLToPath(new URL('./lib/loadgen.mjs', import.meta.url));

async function load(url, connections, seconds, pages) {
  const child = spawn(process.execPath, [LOADGEN, url, String(connections), String(seconds), String(pages)], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let out = '';
  child.stdout.setEncoding('utf8').on('data', (c) => (out += c));
  const code = await new Promise((resolve) => child.on('close', resolve));
  if (code !== 0) throw new Error(`load generator exited ${code}`);
  return JSON.parse(out);
}

export async function run(options) {
  const n = 1000;
  const seconds = options.quick ? 1 : 5;
  const cases = options.quick
    ? [{ latencyMs: 0, connections: 8 }]
    : [
        { latencyMs: 0, connections: 8 },
        { latencyMs: 0, connections: 32 },
        { latencyMs: options.latencyMs, connections: 64 },
      ];
  const rows = [];
  for (const c of cases) {
    const emulator = await startEmulatorChild({ n, latencyMs: c.latencyMs });
    try {
      const before = (await emulator.stats(0)).cpu;
      const result = await load(emulator.url, c.connections, seconds, n / 100);
      const after = (await emulator.stats(0)).cpu;
      const cpuShare = (after.user + after.system - before.user - before.system) / 1000 / ((result.seconds + 1) * 1000);
      rows.push({ ...c, ...result, cpuShare });
    } finally {
      await emulator.stop();
    }
  }
  const best = rows.filter((r) => r.latencyMs === 0).reduce((a, r) => (r.perSecond > a.perSecond ? r : a));
  return {
    name: 'emulator',
    tables: [
      {
        title: `Emulator throughput (figure 6): GET /v2/deployments?limit=100 over ${n} deployments, load generator in its own process, ${seconds} s each`,
        columns: ['latency ms', 'connections', 'requests/s', 'MB/s', 'p50 ms', 'p99 ms', 'failed', 'emulator CPU'],
        rows: rows.map((r) => [
          r.latencyMs,
          r.connections,
          r.perSecond,
          r.mbPerSecond,
          r.p50,
          r.p99,
          r.failed,
          `${Math.round(r.cpuShare * 100)}%`,
        ]),
      },
    ],
    figures: [
      figure(
        '6',
        'emulator: list pages of 100 per second (no added latency)',
        Math.round(best.perSecond),
        'req/s',
        '>= 1000 req/s',
        best.perSecond >= 1000,
        `${best.connections} connections, p99 ${ms(best.p99)} ms`,
      ),
    ],
    notes: [
      'Pages cycle through offsets 0..900; every page holds 100 deployments (~100 KB of JSON). The emulator and the load generator are separate processes on the same 2 cores.',
      "emulator CPU: the emulator process's CPU time over the run (warm-up included), as a share of one core.",
    ],
    rows,
  };
}

if (import.meta.url === `file://${process.argv[1]}`) await benchMain(run);
