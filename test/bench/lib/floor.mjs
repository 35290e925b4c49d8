// The floor of issue 41: the bare parse of the manifest files with the yaml package, on one core and split over the cores, as processes; and the timer of a process.
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { ROOT } from './common.mjs';

const TIME = '/usr/bin/time';

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
  // execArgv []: the worker's code is CommonJS, not this process's --input-type=module.
  const worker = new Worker(code, { eval: true, execArgv: [], workerData: files.filter((_, j) => j % threads === i) });
  worker.once('message', resolve);
  worker.once('error', reject);
})));
if (counts.reduce((a, b) => a + b, 0) !== files.length) process.exit(1);
`;

/** Runs a process to its end; wall time and (with /usr/bin/time) peak RSS. stdout is read and dropped. */
export async function timed(args) {
  const useTime = existsSync(TIME);
  const [command, argv] = useTime
    ? [TIME, ['-f', 'peak-rss-kb %M cpu-s %U %S', process.execPath, ...args]]
    : [process.execPath, args];
  const started = performance.now();
  const child = spawn(command, argv, {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, NO_COLOR: '1' },
  });
  let err = '';
  child.stdout.resume();
  child.stderr.setEncoding('utf8').on('data', (c) => (err += c));
  const code = await new Promise((resolve) => child.on('close', resolve));
  const wallMs = performance.now() - started;
  if (code !== 0 && code !== 1) throw new Error(`${args.join(' ')} exited ${code}: ${err.slice(-1000)}`);
  const rss = /peak-rss-kb (\d+) cpu-s ([\d.]+) ([\d.]+)/.exec(err);
  return {
    code,
    wallMs,
    rssMb: rss ? Number(rss[1]) / 1024 : NaN,
    cpuMs: rss ? (Number(rss[2]) + Number(rss[3])) * 1000 : NaN,
  };
}

/** One run of the floor: the bare parse of DIR's manifest files split over the cores, a process (wall ms, CPU ms, peak RSS). */
export async function splitFloor(dir) {
  return parsed(await timed(['--input-type=module', '-e', BARE_SPLIT, dir]), 'split over the cores');
}

/** One run of the bare parse on one core, a process. */
export async function bareFloor(dir) {
  return parsed(await timed(['--input-type=module', '-e', BARE, dir]), 'on one core');
}

/** A floor's run that did not parse every file (exit 1) is no floor: the benchmark stops. */
function parsed(run, which) {
  if (run.code !== 0) throw new Error(`the bare parse ${which} exited ${run.code}: it did not parse every file`);
  return run;
}
