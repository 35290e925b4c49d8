// Shared bench plumbing: options, timing helpers, text tables, figure records, temp dirs, Redis prefixes.
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = fileURLToPath(new URL('../../..', import.meta.url));
export const CLI = join(ROOT, 'dist', 'cli', 'main.js');
export const REDIS_URL = process.env.REDIS_URL || 'redis://127.0.0.1:6379';

/** Options every bench script receives from the runner (JSON in argv after --opts). */
export function readOptions(argv = process.argv.slice(2)) {
  const at = argv.indexOf('--opts');
  const out = argv.indexOf('--out');
  const opts = at >= 0 ? JSON.parse(argv[at + 1]) : {};
  return { latencyMs: 20, quick: false, ...opts, out: out >= 0 ? argv[out + 1] : undefined };
}

/**
 * A fresh Redis key prefix for one benchmark (with a {hash tag}, as converge's prefixes keep). Under the test suite
 * (CONVERGE_TEST_PREFIX set) it extends the run's prefix, so the suite's teardown removes anything left behind.
 */
export function benchPrefix(name) {
  const id = randomBytes(4).toString('hex');
  const base = process.env.CONVERGE_TEST_PREFIX;
  return base ? `${base}-bench-${name}-${id}` : `{bench-${name}-${id}}`;
}

/** A free TCP port on loopback (asked of the OS, then released). */
export async function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

/** Ends a child process: SIGTERM, then SIGKILL after 15 s; resolves once `exited` (its exit promise) has. */
export async function stopChild(child, exited) {
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
  await exited;
  clearTimeout(timer);
}

export async function tempDir(name) {
  return mkdtemp(join(tmpdir(), `converge-bench-${name}-`));
}

export async function removeDir(dir) {
  await rm(dir, { recursive: true, force: true });
}

export function ms(value) {
  return Math.round(value * 10) / 10;
}

export function median(values) {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

/** Nearest-rank percentile. */
export function percentile(values, p) {
  const sorted = [...values].sort((a, b) => a - b);
  const rank = Math.min(sorted.length, Math.max(1, Math.ceil((p / 100) * sorted.length)));
  return sorted[rank - 1];
}

export function formatNumber(value) {
  if (typeof value !== 'number') return String(value);
  if (!Number.isFinite(value)) return String(value);
  if (Number.isInteger(value)) return value.toLocaleString('en-US');
  if (Math.abs(value) >= 100) return value.toFixed(0);
  if (Math.abs(value) >= 10) return value.toFixed(1);
  return value.toFixed(2);
}

/** A text table: columns and rows of cells (numbers formatted). */
export function renderTable({ title, columns, rows }) {
  const cells = rows.map((row) => row.map(formatNumber));
  const widths = columns.map((c, i) => Math.max(c.length, ...cells.map((r) => r[i].length)));
  const line = (r) => r.map((cell, i) => (i === 0 ? cell.padEnd(widths[i]) : cell.padStart(widths[i]))).join('  ');
  return [title, line(columns), widths.map((w) => '-'.repeat(w)).join('  '), ...cells.map(line)].join('\n');
}

/** A markdown table of the same: columns of numbers right-aligned, others left. */
export function markdownTable({ columns, rows }) {
  const cells = rows.map((row) => row.map(formatNumber));
  const numeric = columns.map((_, i) => rows.every((row) => typeof row[i] === 'number' || row[i] === '-'));
  const rule = columns.map((_, i) => (numeric[i] ? ' ---: ' : ' --- ')).join('|');
  return [`| ${columns.join(' | ')} |`, `|${rule}|`, ...cells.map((r) => `| ${r.join(' | ')} |`)].join('\n');
}

/**
 * One figure of an issue: `value` against `target` ("<= 300 MB", ">= 20x", ...). pass is computed by the
 * caller (the comparison differs per figure) and null for figures that are reported only. `at` places a figure in the
 * runner's table of issue 41 or 50: `{ key, n }`, key one of ISSUE41_FIGURES's or ISSUE50_FIGURES's (test/bench/run.mjs);
 * without `n` for a figure measured once, whatever N (a command as a process).
 */
export function figure(id, what, value, unit, target, pass, detail = '', at = undefined) {
  return { id, what, value, unit, target, pass, detail, ...(at ? { at } : {}) };
}

/**
 * Runs a bench script's `run(options)` when the script is the main module: prints its tables and notes,
 * writes its result (tables, figures, notes) as JSON to --out for the runner.
 */
export async function benchMain(run) {
  const options = readOptions();
  const result = await run(options);
  for (const table of result.tables) process.stdout.write(`\n${renderTable(table)}\n`);
  for (const note of result.notes ?? []) process.stdout.write(`  note: ${note}\n`);
  if (options.out) await writeFile(options.out, JSON.stringify(result));
}
