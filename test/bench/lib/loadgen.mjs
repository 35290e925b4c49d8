// Load generator for the emulator benchmark, run as its own process: N keep-alive connections (undici Pool), GET pages of 100.
import { Pool } from 'undici';

const [url, connectionsText, secondsText, pagesText] = process.argv.slice(2);
const connections = Number(connectionsText);
const seconds = Number(secondsText);
const pages = Number(pagesText);
const pool = new Pool(url, { connections, pipelining: 1, keepAliveTimeout: 30_000 });

let done = 0;
let failed = 0;
let bytes = 0;
const latencies = [];
let measuring = false;

async function one(k) {
  const started = performance.now();
  const { statusCode, body } = await pool.request({
    method: 'GET',
    path: `/v2/deployments?limit=100&offset=${(k % pages) * 100}`,
  });
  for await (const chunk of body) bytes += measuring ? chunk.length : 0;
  if (!measuring) return;
  if (statusCode === 200) done++;
  else failed++;
  latencies.push(performance.now() - started);
}

async function lane(id, until) {
  let k = id;
  while (performance.now() < until) {
    try {
      await one(k);
    } catch {
      if (measuring) failed++;
    }
    k += connections;
  }
}

// One second of warm-up (connections opened, JIT warm, the emulator's JSON cache filled), then the measured run.
await Promise.all(Array.from({ length: connections }, (_, i) => lane(i, performance.now() + 1000)));
measuring = true;
const started = performance.now();
await Promise.all(Array.from({ length: connections }, (_, i) => lane(i, started + seconds * 1000)));
const elapsed = (performance.now() - started) / 1000;
latencies.sort((a, b) => a - b);
const at = (p) =>
  latencies[Math.min(latencies.length - 1, Math.max(0, Math.ceil((p / 100) * latencies.length) - 1))] ?? 0;
process.stdout.write(
  JSON.stringify({
    done,
    failed,
    seconds: elapsed,
    perSecond: done / elapsed,
    mbPerSecond: bytes / elapsed / 1e6,
    p50: at(50),
    p99: at(99),
  }) + '\n',
);
await pool.close();
