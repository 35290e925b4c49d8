// A converge command as its own process, timed from outside: wall time from spawn to exit, its CPU (user + system) and peak RSS.
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { CLI } from './common.mjs';

const TIME = '/usr/bin/time';

/**
 * Runs `converge ARGS` to its end. CPU and peak RSS come from GNU time (`/usr/bin/time -v`) when it is there, else
 * from lib/rss-wrapper.mjs (the command run in a process that reports `process.resourceUsage()` at exit).
 */
export async function timedConverge(args, env = process.env) {
  const useTime = existsSync(TIME);
  const wrapper = new URL('./rss-wrapper.mjs', import.meta.url).pathname;
  const [command, argv] = useTime
    ? [TIME, ['-v', process.execPath, CLI, ...args]]
    : [process.execPath, [wrapper, CLI, ...args]];
  const started = performance.now();
  const child = spawn(command, argv, { env: { ...env, NO_COLOR: '1' }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (c) => (stdout += c));
  child.stderr.setEncoding('utf8').on('data', (c) => (stderr += c));
  const code = await new Promise((resolve) => child.on('close', resolve));
  const wallMs = performance.now() - started;
  const field = (pattern) => Number(pattern.exec(stderr)?.[1] ?? NaN);
  const cpuMs = useTime
    ? (field(/User time \(seconds\): ([\d.]+)/) + field(/System time \(seconds\): ([\d.]+)/)) * 1000
    : field(/cpuMs ([\d.]+)/);
  const rssMb = (useTime ? field(/Maximum resident set size \(kbytes\): (\d+)/) : field(/maxRSS (\d+)/)) / 1024;
  return { code, wallMs, cpuMs, rssMb, stdout, stderr };
}
