// `npm run bench`: runs the benchmarks (each in its own process), prints every figure against its target and the figures of issues 41 and 50 at 1,000 and 10,000 in a table each, writes RESULTS.md.
import { spawn, spawnSync } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { cpus, freemem, platform, release, tmpdir, totalmem } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { createMemoryCgroup } from './lib/cgroup.mjs';
import { formatNumber, markdownTable, renderTable, ROOT } from './lib/common.mjs';

const BENCHES = ['emulator', 'plan', 'load', 'apply', 'steady', 'watch', 'status-page', 'daemon', 'outside'];

/**
 * The figures of issue 41, each measured at 1,000 and 10,000 deployments by one benchmark: a figure the benchmark
 * reports with `at: { key, n }` (lib/common.mjs figure()) fills its cell; a cell no benchmark filled says so.
 */
const ISSUE41_FIGURES = [
  {
    key: 'edit-patch',
    what: 'edit of one file -> its PATCH on the wire (median)',
    target: '< 500 ms at 10,000',
    bench: 'watch',
  },
  { key: 'first-reconcile', what: 'first reconcile after start', target: '< 6 s at 10,000', bench: 'daemon' },
  { key: 'resync', what: 'a resync (no change)', target: '0 writes', bench: 'daemon' },
  {
    key: 'status-body',
    what: '/status body, and what a change costs the page',
    target: 'a change: the rows that changed',
    bench: 'status-page',
  },
  { key: 'page-rows', what: 'page: rows drawn', target: '< 1.5 s at 10,000', bench: 'status-page' },
  {
    key: 'page-keystroke',
    what: 'page: one keystroke in the filter',
    target: '< 100 ms at 10,000',
    bench: 'status-page',
  },
  { key: 'rss', what: 'daemon RSS', target: '< 250 MB at 10,000', bench: 'daemon' },
  {
    key: 'plan-floor',
    what: 'converge plan / bare parse split over the cores',
    target: '<= 2.0x at 10,000',
    bench: 'plan',
  },
  {
    key: 'validate-floor',
    what: 'converge validate / bare parse split over the cores',
    target: '<= 1.6x at 10,000',
    bench: 'load',
  },
];

/**
 * Issue 50's "Done when", at 1,000 and 10,000 deployments: the daemon as a user meets it (outside.mjs, from spawn), and
 * the figures other benchmarks measure. A `sizeless` figure (a command as a process) is one value, in the first column.
 */
const ISSUE50_FIGURES = [
  { key: 'spawn-rows', what: 'spawn -> N rows on /status', target: '<= 6 s at 10,000', bench: 'outside' },
  { key: 'spawn-healthz', what: 'spawn -> /healthz 200', target: '<= 1 s', bench: 'outside' },
  { key: 'help-wall', what: 'converge --help, wall', target: '<= 0.25 s', bench: 'outside', sizeless: true },
  { key: 'help-cpu', what: 'converge --help, CPU', target: '<= 0.2 s', bench: 'outside', sizeless: true },
  {
    key: 'validate-3',
    what: 'converge validate of 3 files, wall',
    target: '(reported)',
    bench: 'outside',
    sizeless: true,
  },
  {
    key: 'edit-patch',
    what: 'edit -> PATCH (median of 5, debounce included)',
    target: '<= 500 ms at 10,000',
    bench: 'watch',
  },
  { key: 'page-first-rows', what: 'page: navigation -> first rows drawn', target: '<= 1.5 s', bench: 'outside' },
  {
    key: 'filter-matches',
    what: 'page: filter keystroke -> only matches shown',
    target: '<= 100 ms',
    bench: 'outside',
  },
  {
    key: 'status-poll',
    what: 'unchanged /status poll (as the client times it)',
    target: '<= 20 ms server time',
    bench: 'status-page',
  },
  { key: 'status-whole', what: 'whole /status', target: '<= 8 MB at 10,000', bench: 'status-page' },
  { key: 'rss-rest', what: 'RSS at rest (page open, /metrics scraped)', target: '< 250 MB', bench: 'outside' },
  { key: 'rss-peak', what: 'peak RSS (VmHWM)', target: '< 300 MB', bench: 'outside' },
  { key: 'plan-floor', what: 'plan / bare parse split over the cores', target: '<= 2.0x at 10,000', bench: 'plan' },
  {
    key: 'validate-floor',
    what: 'validate / bare parse split over the cores',
    target: '<= 1.6x at 10,000',
    bench: 'load',
  },
];
const ISSUE_SIZES = [1000, 10000];
const ISSUE_TABLES = [
  { issue: 41, figures: ISSUE41_FIGURES },
  { issue: 50, figures: ISSUE50_FIGURES },
];

const USAGE = `Usage: npm run bench -- [--only ${BENCHES.join(',')}] [--quick] [--latency-ms N] [--daemon-memory MIB]
                        [--results FILE | --no-results]

  --only LIST      run only these benchmarks (comma-separated)
  --quick          small N everywhere: a smoke run (its numbers are not the issues' figures)
  --latency-ms N   latency the emulator adds to every request (default 20)
  --daemon-memory MIB
                   start every daemon the benchmarks start in a memory cgroup of MIB MiB, as a container's memory limit
                   (examples/kubernetes: 512) would; Node sizes its heap from that limit. Linux, as root
  --results FILE   write the results as markdown there (default test/bench/RESULTS.md; with --quick, none unless given)
  --no-results     write no results file
`;

function options() {
  const { values } = parseArgs({
    options: {
      only: { type: 'string' },
      quick: { type: 'boolean', default: false },
      'latency-ms': { type: 'string', default: '20' },
      'daemon-memory': { type: 'string' },
      results: { type: 'string' },
      'no-results': { type: 'boolean', default: false },
      help: { type: 'boolean', default: false },
    },
  });
  if (values.help) {
    process.stdout.write(USAGE);
    process.exit(0);
  }
  const only = values.only
    ? values.only
        .split(',')
        .map((s) => s.trim())
        .filter(Boolean)
    : BENCHES;
  const unknown = only.filter((b) => !BENCHES.includes(b));
  if (unknown.length) throw new Error(`--only: unknown benchmark ${unknown.join(', ')}; known: ${BENCHES.join(', ')}`);
  const latencyMs = Number(values['latency-ms']);
  if (!Number.isInteger(latencyMs) || latencyMs < 0)
    throw new Error(`--latency-ms: "${values['latency-ms']}" is not a whole number >= 0`);
  const daemonMemory = values['daemon-memory'] === undefined ? undefined : Number(values['daemon-memory']);
  if (daemonMemory !== undefined && !(Number.isInteger(daemonMemory) && daemonMemory >= 64))
    throw new Error(`--daemon-memory: "${values['daemon-memory']}" is not a whole number of MiB >= 64`);
  const results = values['no-results']
    ? undefined
    : (values.results ?? (values.quick ? undefined : join(ROOT, 'test', 'bench', 'RESULTS.md')));
  return { only: BENCHES.filter((b) => only.includes(b)), quick: values.quick, latencyMs, daemonMemory, results };
}

function machine() {
  const list = cpus();
  const redis = spawnSync('redis-cli', ['-u', process.env.REDIS_URL || 'redis://127.0.0.1:6379', 'INFO', 'server'], {
    encoding: 'utf8',
  });
  const redisVersion = /redis_version:(\S+)/.exec(redis.stdout ?? '')?.[1] ?? 'unknown';
  return {
    cpu: list[0]?.model ?? 'unknown',
    cores: list.length,
    memoryGb: Math.round((totalmem() / 1024 ** 3) * 10) / 10,
    freeGb: Math.round((freemem() / 1024 ** 3) * 10) / 10,
    os: `${platform()} ${release()}`,
    node: process.version,
    redis: redisVersion,
    date: new Date().toISOString(),
  };
}

/** Runs one benchmark script in its own process (node --expose-gc); resolves with its JSON result. */
async function runBench(name, opts, scratch) {
  const out = join(scratch, `${name}.json`);
  const args = [
    '--expose-gc',
    join(ROOT, 'test', 'bench', `${name}.mjs`),
    '--opts',
    JSON.stringify({ latencyMs: opts.latencyMs, quick: opts.quick }),
    '--out',
    out,
  ];
  const started = Date.now();
  const child = spawn(process.execPath, args, { cwd: ROOT, stdio: ['ignore', 'inherit', 'inherit'] });
  const code = await new Promise((resolve) => child.on('close', (c, signal) => resolve(c ?? signal)));
  if (code !== 0) return { name, error: `exited ${code}`, seconds: (Date.now() - started) / 1000 };
  return { ...JSON.parse(await readFile(out, 'utf8')), seconds: (Date.now() - started) / 1000 };
}

function verdict(f) {
  return f.pass === null ? 'info' : f.pass ? 'PASS' : 'MISS';
}

function summaryTable(results) {
  const rows = [];
  for (const r of results) {
    if (r.error) {
      rows.push(['-', `${r.name}: did not run to the end (${r.error})`, '-', '-', 'ERROR']);
      continue;
    }
    for (const f of r.figures)
      rows.push([f.id, f.what, `${f.value} ${f.unit}${f.detail ? ` (${f.detail})` : ''}`, f.target, verdict(f)]);
  }
  return {
    title: 'Figures of issues 7, 36, 41 and 50 against their targets (# is the issue, or issue.item)',
    columns: ['#', 'figure', 'value', 'target', 'result'],
    rows,
  };
}

/** One cell of an issue's table: the value and its verdict, or why there is none. */
function issueCell(results, entry, n, first) {
  const result = results.find((r) => r.name === entry.bench);
  if (!result) return `not run (--only ${entry.bench})`;
  if (result.error) return `${entry.bench} failed`;
  const mine = (result.figures ?? []).filter((x) => x.at?.key === entry.key);
  if (mine.length === 0) return `not reported by ${entry.bench}.mjs`;
  const f = entry.sizeless ? (first ? mine[0] : undefined) : mine.find((x) => x.at.n === n);
  if (!f) return entry.sizeless ? '(no N)' : '-';
  return `${formatNumber(f.value)} ${f.unit} ${verdict(f)}`;
}

/** An issue's figures at 1,000 and 10,000, with their targets; with --quick, at the sizes the benchmarks ran. */
function issueTable(results, quick, { issue, figures }) {
  const ran = results
    .flatMap((r) => r.figures ?? [])
    .filter((f) => f.at?.n !== undefined)
    .map((f) => f.at.n);
  const sizes = quick ? [...new Set(ran)].sort((a, b) => a - b) : ISSUE_SIZES;
  return {
    title: `Issue ${issue}'s figures (a value's verdict is against the target in its figure's line above)`,
    columns: ['figure', ...sizes.map((n) => `N=${n.toLocaleString('en-US')}`), 'target'],
    rows: figures.map((entry) => [
      entry.what,
      ...sizes.map((n, i) => issueCell(results, entry, n, i === 0)),
      entry.target,
    ]),
  };
}

/** The flags of this run as `npm run bench` takes them (none for a run of every benchmark with the defaults). */
function runFlags(opts) {
  const flags = [
    ...(opts.only.length < BENCHES.length ? [`--only ${opts.only.join(',')}`] : []),
    ...(opts.quick ? ['--quick'] : []),
    ...(opts.latencyMs !== 20 ? [`--latency-ms ${opts.latencyMs}`] : []),
    ...(opts.daemonMemory ? [`--daemon-memory ${opts.daemonMemory}`] : []),
  ];
  return flags.length ? ` -- ${flags.join(' ')}` : '';
}

function markdown(opts, info, results) {
  const lines = [
    '# converge benchmarks (issues 7, 36, 41, 50)',
    '',
    `Run with \`npm run bench${runFlags(opts)}\` on ${info.date}.`,
    '',
    '| machine | |',
    '| --- | --- |',
    `| CPU | ${info.cpu} |`,
    `| cores | ${info.cores} |`,
    `| memory | ${info.memoryGb} GB (${info.freeGb} GB free at start) |`,
    `| OS | ${info.os} |`,
    `| Node.js | ${info.node} |`,
    `| Redis | ${info.redis} |`,
    `| emulator latency | ${opts.latencyMs} ms added to every request |`,
    `| daemons' memory limit | ${opts.daemonMemory ? `${opts.daemonMemory} MiB (a memory cgroup, no heap flag)` : "none (the machine's memory)"} |`,
    '',
    'The emulator always runs in its own process (a child of each benchmark), so its CPU is not counted as',
    "converge's. `converge plan` (figure 1), the daemon (figure 5) and the load generator (figure 6) are",
    'further processes of their own; apply (figure 3) and the steady-state cycles (figure 4) run converge in',
    "the benchmark process. All of it shares the machine's cores.",
    '',
    '## Figures',
    '',
    markdownTable(summaryTable(results)),
    '',
    ...ISSUE_TABLES.flatMap((spec) => [
      `## Issue ${spec.issue}'s figures`,
      '',
      markdownTable(issueTable(results, opts.quick, spec)),
      '',
    ]),
  ];
  for (const r of results) {
    if (r.error) continue;
    lines.push(`## ${r.name} (${Math.round(r.seconds)} s)`, '');
    for (const table of r.tables) lines.push(`**${table.title}**`, '', markdownTable(table), '');
    for (const note of r.notes ?? []) lines.push(`- ${note}`);
    lines.push('');
  }
  return lines.join('\n');
}

async function main() {
  const opts = options();
  const info = machine();
  process.stdout.write(
    `converge benchmarks: ${opts.only.join(', ')}${opts.quick ? ' (quick)' : ''}; latency ${opts.latencyMs} ms${opts.daemonMemory ? `; daemons in ${opts.daemonMemory} MiB` : ''}; ${info.cpu}, ${info.cores} cores, ${info.memoryGb} GB, Node ${info.node}, Redis ${info.redis}\n`,
  );
  // Made first, so a refused one leaves no scratch folder behind. The benchmarks' processes inherit it;
  // lib/daemon-child.mjs starts each daemon in the cgroup.
  const cgroup = opts.daemonMemory ? createMemoryCgroup(opts.daemonMemory) : undefined;
  if (cgroup) process.env.BENCH_DAEMON_CGROUP = cgroup.dir;
  const scratch = await mkdtemp(join(tmpdir(), 'converge-bench-'));
  const results = [];
  try {
    for (const name of opts.only) {
      process.stdout.write(`\n=== ${name}\n`);
      results.push(await runBench(name, opts, scratch));
    }
  } finally {
    await rm(scratch, { recursive: true, force: true });
    cgroup?.remove();
  }
  process.stdout.write(`\n${renderTable(summaryTable(results))}\n`);
  for (const spec of ISSUE_TABLES) process.stdout.write(`\n${renderTable(issueTable(results, opts.quick, spec))}\n`);
  const figures = results.flatMap((r) => r.figures ?? []);
  const missed = figures.filter((f) => f.pass === false).length;
  const failed = results.filter((r) => r.error).length;
  process.stdout.write(
    `\n${figures.filter((f) => f.pass === true).length} PASS, ${missed} MISS, ${figures.filter((f) => f.pass === null).length} reported, ${failed} benchmark(s) failed to run\n`,
  );
  if (opts.results) {
    await writeFile(opts.results, markdown(opts, info, results));
    process.stdout.write(`results written to ${opts.results}\n`);
  }
  process.exitCode = failed > 0 ? 1 : 0;
}

main().catch((error) => {
  process.stderr.write(`bench: ${error?.message ?? String(error)}\n`);
  process.exitCode = 1;
});
