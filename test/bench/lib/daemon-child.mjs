// `converge run` as a child process for the benchmarks: its JSON log lines awaited by match, POST /reconcile, its memory from /proc.
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { CLI, freePort, REDIS_URL, stopChild } from './common.mjs';

/** The bearer token of POST /reconcile the benchmarks give their daemons (docs/daemon.md): a bench value, not a secret. */
const BENCH_TOKEN = 'bench-reconcile-token';

/** VmRSS and VmHWM (peak) of a process in MB, from /proc (Linux); NaN elsewhere. */
export function procMemoryMb(pid) {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kb = (field) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? NaN);
    return { rssMb: kb('VmRSS') / 1024, peakMb: kb('VmHWM') / 1024 };
  } catch {
    return { rssMb: NaN, peakMb: NaN };
  }
}

/**
 * The command that runs node with `argv` for a daemon: node itself, or, with BENCH_DAEMON_CGROUP=DIR (`npm run bench --
 * --daemon-memory MIB`, lib/cgroup.mjs), a shell that moves itself into that memory cgroup and then becomes node, so
 * node starts under the limit as in a container (Node sizes its heap from the limit it starts under).
 */
export function daemonCommand(argv) {
  const cgroup = process.env.BENCH_DAEMON_CGROUP;
  return cgroup
    ? ['/bin/sh', ['-c', 'echo $$ > "$0/cgroup.procs" && exec "$@"', cgroup, process.execPath, ...argv]]
    : [process.execPath, argv];
}

/**
 * Starts `converge run DIR` (log level info, JSON lines on stdout) with POST /reconcile on. `execArgv` goes to node
 * (e.g. --cpu-prof); `args` are added to the command. Resolves once the process is spawned; `waitFor` a log line.
 */
export async function startDaemonChild({ dir, apiUrl, prefix, env, args = [], execArgv = [] }) {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  // BENCH_DAEMON_PROF=DIR writes a CPU profile of each daemon process there (node --cpu-prof, written when it exits).
  // BENCH_DAEMON_NODE_ARGS="--max-old-space-size=320" gives node options to the daemon only (the build and the bench keep theirs).
  const profile = [
    ...(process.env.BENCH_DAEMON_PROF ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_DAEMON_PROF}`] : []),
    ...(process.env.BENCH_DAEMON_NODE_ARGS ?? '').split(' ').filter(Boolean),
  ];
  const argv = [
    ...profile,
    ...execArgv,
    CLI,
    'run',
    dir,
    '--api-url',
    apiUrl,
    '--redis-url',
    REDIS_URL,
    '--redis-prefix',
    prefix,
    '--http-host',
    '127.0.0.1',
    '--http-port',
    String(port),
    '--log-level',
    'info',
    ...args,
  ];
  const [command, commandArgs] = daemonCommand(argv);
  const spawnedAt = performance.now();
  const child = spawn(command, commandArgs, {
    env: { ...env, NO_COLOR: '1', CONVERGE_WEBHOOK_TOKEN: BENCH_TOKEN },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const lines = [];
  const waiters = new Set();
  let partial = '';
  let err = '';
  child.stdout.setEncoding('utf8').on('data', (chunk) => {
    partial += chunk;
    for (let nl = partial.indexOf('\n'); nl >= 0; nl = partial.indexOf('\n')) {
      const text = partial.slice(0, nl);
      partial = partial.slice(nl + 1);
      let line;
      try {
        line = { ...JSON.parse(text), receivedAt: performance.now() };
      } catch {
        line = { msg: text, receivedAt: performance.now() };
      }
      lines.push(line);
      for (const w of [...waiters]) {
        if (!w.match(line)) continue;
        waiters.delete(w);
        w.resolve(line);
      }
    }
  });
  child.stderr.setEncoding('utf8').on('data', (c) => (err += c));
  let ended = false;
  const exited = new Promise((resolve) => child.once('exit', resolve)).then((code) => ((ended = true), code));
  /** The first log line (from `from` on) that `match` accepts, within `timeoutMs`. */
  function waitFor(match, timeoutMs, from = 0) {
    const found = lines.slice(from).find(match);
    if (found) return Promise.resolve(found);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(
        () => (
          waiters.delete(w),
          reject(new Error(`daemon: no matching log line in ${timeoutMs} ms; stderr: ${err.slice(-800)}`))
        ),
        timeoutMs,
      );
      const w = { match, resolve: (line) => (clearTimeout(timer), resolve(line)) };
      waiters.add(w);
      exited.then(
        () => (waiters.delete(w), clearTimeout(timer), reject(new Error(`daemon exited: ${err.slice(-800)}`))),
      );
    });
  }
  /** POST /reconcile {} and its log line: one full reconcile (what a resync runs) from request to answer. */
  async function reconcileNow(timeoutMs) {
    const from = lines.length;
    const started = performance.now();
    const res = await fetch(`${url}/reconcile`, {
      method: 'POST',
      headers: { authorization: `Bearer ${BENCH_TOKEN}`, 'content-type': 'application/json' },
      body: '{}',
      signal: AbortSignal.timeout(timeoutMs),
    });
    const body = await res.text();
    if (res.status !== 200) throw new Error(`POST /reconcile answered ${res.status}: ${body.slice(0, 500)}`);
    const wallMs = performance.now() - started;
    const line = await waitFor((l) => l.msg === 'reconciled' && l.trigger === 'manual', timeoutMs, from);
    return { wallMs, line };
  }
  return {
    pid: child.pid,
    url,
    spawnedAt,
    lines,
    waitFor,
    reconcileNow,
    memory: () => procMemoryMb(child.pid),
    stderr: () => err,
    /** Whether the process has exited. */
    hasExited: () => ended,
    stop: () => stopChild(child, exited),
  };
}
