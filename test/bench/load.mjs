// Issue 36: loading N single-document manifest files: `converge validate` against one core's bare parseAllDocuments, and what each step costs.
import { spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { availableParallelism, loadavg } from 'node:os';
import { join } from 'node:path';
import { Composer, Parser } from 'yaml';
import { compileFile } from '../../dist/core/manifest/compile.js';
import { CompilePool } from '../../dist/observe/compile-pool.js';
import { readCapped } from '../../dist/observe/read-capped.js';
import { benchMain, CLI, figure, median, ms, removeDir, ROOT, tempDir } from './lib/common.mjs';
import { writeManifests } from './lib/fixtures.mjs';

const TIME = '/usr/bin/time';
const RUNS = 3;

/** What the issue compares against: a process that reads every file and runs the yaml package's parseAllDocuments on it, on one core. */
const BARE = `
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
const dir = process.argv[1];
let docs = 0;
for (const name of readdirSync(dir, { recursive: true })) if (name.endsWith('.yaml')) docs += parseAllDocuments(readFileSync(join(dir, name), 'utf8')).length;
if (docs === 0) process.exit(1);
`;

/**
 * Issue 41's floor: the same bare parse split over the cores, a process whose worker threads (one per core, the
 * main thread listing the files) each read and parseAllDocuments their share.
 */
const BARE_SPLIT = `
import { readdirSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
const dir = process.argv[1];
const files = readdirSync(dir, { recursive: true }).filter((name) => name.endsWith('.yaml')).map((name) => join(dir, name));
const threads = availableParallelism();
const code = "const { readFileSync } = require('node:fs'); const { parseAllDocuments } = require('yaml'); const { workerData, parentPort } = require('node:worker_threads'); let docs = 0; for (const file of workerData) docs += parseAllDocuments(readFileSync(file, 'utf8')).length; parentPort.postMessage(docs);";
const counts = await Promise.all(Array.from({ length: threads }, (_, i) => new Promise((resolve, reject) => {
  const worker = new Worker(code, { eval: true, workerData: files.filter((_, j) => j % threads === i) });
  worker.once('message', resolve);
  worker.once('error', reject);
})));
if (counts.reduce((a, b) => a + b, 0) !== files.length) process.exit(1);
`;

/** Runs a process to its end; wall time and (with /usr/bin/time) peak RSS. stdout is read and dropped. */
async function timed(args) {
  const useTime = existsSync(TIME);
  const [command, argv] = useTime ? [TIME, ['-f', 'peak-rss-kb %M cpu-s %U %S', process.execPath, ...args]] : [process.execPath, args];
  const started = performance.now();
  const child = spawn(command, argv, { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, NO_COLOR: '1' } });
  let err = '';
  child.stdout.resume();
  child.stderr.setEncoding('utf8').on('data', (c) => (err += c));
  const code = await new Promise((resolve) => child.on('close', resolve));
  const wallMs = performance.now() - started;
  if (code !== 0 && code !== 1) throw new Error(`${args.join(' ')} exited ${code}: ${err.slice(-1000)}`);
  const rss = /peak-rss-kb (\d+) cpu-s ([\d.]+) ([\d.]+)/.exec(err);
  return { wallMs, rssMb: rss ? Number(rss[1]) / 1024 : NaN, cpuMs: rss ? (Number(rss[2]) + Number(rss[3])) * 1000 : NaN };
}

/** The files' bytes, read once (the page cache is warm for every run after). */
function readAll(dir) {
  return readdirSync(dir, { recursive: true })
    .filter((name) => name.endsWith('.yaml'))
    .sort()
    .map((name) => ({ file: name, bytes: readFileSync(join(dir, name)) }));
}

/** Median wall time of `work` over RUNS runs, after one to warm up (a busy machine shows in wall time, not in CPU time: cpuMs is this process's). */
async function medianMs(work) {
  await work();
  const runs = [];
  const cpu = [];
  for (let i = 0; i < RUNS; i++) {
    globalThis.gc?.();
    const t = performance.now();
    const c = process.cpuUsage();
    await work();
    runs.push(performance.now() - t);
    const used = process.cpuUsage(c);
    cpu.push((used.user + used.system) / 1000);
  }
  return { ms: median(runs), cpuMs: median(cpu) };
}

/** What each step of the load costs in this thread: reading, the parser alone, the whole compile (parser, positions, variables, schemas, conversion). */
async function steps(dir) {
  const names = readdirSync(dir, { recursive: true }).filter((name) => name.endsWith('.yaml')).map((name) => join(dir, name));
  const files = readAll(dir);
  const options = { allowLiteralSecrets: false };
  const readMs = await medianMs(() => names.forEach((name) => readCapped(name, 1024 * 1024, { follow: false })));
  const parseMs = await medianMs(() => files.forEach((f) => Array.from(new Composer({ merge: true, uniqueKeys: true }).compose(new Parser().parse(new TextDecoder().decode(f.bytes))))));
  const compileMs = await medianMs(() => files.forEach((f) => compileFile(f, options)));
  let poolMs = { ms: NaN, cpuMs: NaN };
  const threads = availableParallelism();
  if (threads >= 2) {
    poolMs = await medianMs(async () => {
      const pool = CompilePool.start(options);
      if (!pool) throw new Error('no compile pool: dist/observe/compile-worker.js is missing (npm run build)');
      try {
        await pool.compile(files);
      } finally {
        await pool.close();
      }
    });
  }
  return { readMs, parseMs, compileMs, poolMs, threads };
}

async function benchOne(n) {
  const dir = await tempDir(`load-${n}`);
  try {
    await writeManifests(dir, n);
    const bare = [];
    const split = [];
    const validate = [];
    // Interleaved, so that a busy moment of the machine falls on both.
    for (let i = 0; i < RUNS; i++) {
      bare.push(await timed(['--input-type=module', '-e', BARE, dir]));
      split.push(await timed(['--input-type=module', '-e', BARE_SPLIT, dir]));
      validate.push(await timed([CLI, 'validate', dir, '--output', 'json']));
    }
    return {
      n,
      bareMs: median(bare.map((r) => r.wallMs)),
      bareCpuMs: median(bare.map((r) => r.cpuMs)),
      splitMs: median(split.map((r) => r.wallMs)),
      splitCpuMs: median(split.map((r) => r.cpuMs)),
      validateMs: median(validate.map((r) => r.wallMs)),
      validateCpuMs: median(validate.map((r) => r.cpuMs)),
      validateRssMb: Math.max(...validate.map((r) => r.rssMb)),
      ...(await steps(dir)),
    };
  } finally {
    await removeDir(dir);
  }
}

export async function run(options) {
  const n = options.quick ? 1000 : 10000;
  const r = await benchOne(n);
  const tables = [
    {
      title: `Load (issue 36): ${n} single-document manifest files, ${r.threads} cores`,
      columns: ['N', 'step', 'wall ms', 'CPU ms'],
      rows: [
        [r.n, 'bare parseAllDocuments, a process on one core', ms(r.bareMs), ms(r.bareCpuMs)],
        [r.n, `the same split over ${r.threads} worker threads (issue 41's floor)`, ms(r.splitMs), ms(r.splitCpuMs)],
        [r.n, `converge validate, a process (peak RSS ${ms(r.validateRssMb)} MB)`, ms(r.validateMs), ms(r.validateCpuMs)],
        [r.n, 'read every file (capped reader)', ms(r.readMs.ms), ms(r.readMs.cpuMs)],
        [r.n, 'the parser alone (yaml Parser + Composer)', ms(r.parseMs.ms), ms(r.parseMs.cpuMs)],
        [r.n, 'compile in one thread (parser and all beyond it)', ms(r.compileMs.ms), ms(r.compileMs.cpuMs)],
        [r.n, 'beyond the parser (compile - parser)', ms(r.compileMs.ms - r.parseMs.ms), ms(r.compileMs.cpuMs - r.parseMs.cpuMs)],
        [r.n, `compile on the pool (this thread and ${r.threads - 1} worker thread${r.threads === 2 ? '' : 's'}), their start included (CPU: every thread of the process)`, ms(r.poolMs.ms), ms(r.poolMs.cpuMs)],
      ],
    },
  ];
  const figures = [
    figure('36', `validate N=${n}: converge validate / bare parseAllDocuments on one core`, Math.round((r.validateMs / r.bareMs) * 100) / 100, 'x', r.threads >= 4 ? '<= 1.00x' : '<= 1.35x (2 cores; issue 36 asked 1.00x: docs/performance.md)', r.validateMs <= r.bareMs * (r.threads >= 4 ? 1 : 1.35), `${ms(r.validateMs)} ms against ${ms(r.bareMs)} ms`),
    figure('41.5', `validate N=${n}: converge validate / bare parse split over ${r.threads} cores (the floor)`, Math.round((r.validateMs / r.splitMs) * 100) / 100, 'x', '<= 1.60x', r.validateMs <= r.splitMs * 1.6, `${ms(r.validateMs)} ms against ${ms(r.splitMs)} ms, taken back to back; load average ${loadavg().map((l) => l.toFixed(1)).join(', ')}`),
    figure('36', `load N=${n}: compile on the pool (${r.threads} cores) / in one thread, wall`, Math.round((r.poolMs.ms / r.compileMs.ms) * 100) / 100, 'x', 'info', null, `${ms(r.poolMs.ms)} ms against ${ms(r.compileMs.ms)} ms, the threads' start included`),
  ];
  return {
    name: 'load',
    tables,
    figures,
    notes: [
      `bare: a process reading each file with readFileSync and running the yaml package's parseAllDocuments on it (median of ${RUNS}); validate: \`converge validate DIR --output json\` as a process, start-up included (median of ${RUNS}, runs interleaved with bare).`,
      'read: the capped reader over every file; parser: the yaml Parser and Composer (what parseAllDocuments does); compile: compileFile (parser, positions, variables, schemas, warnings, conversion) in this thread; beyond the parser = compile - parser; pool: the same files on a CompilePool, its threads started and closed in each run. Medians of 3 after a warm-up run.',
    ],
  };
}

if (import.meta.url === `file://${process.argv[1]}`) await benchMain(run);
