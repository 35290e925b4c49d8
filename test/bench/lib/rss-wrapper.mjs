// Fallback where /usr/bin/time is missing: runs `converge ARGS` in this process, prints its peak RSS (KiB) and CPU (ms) on stderr at exit.
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

const [given, ...args] = process.argv.slice(2);
const cli = resolve(given);
process.argv = [process.argv[0], cli, ...args];
process.on('exit', () => {
  const usage = process.resourceUsage();
  process.stderr.write(`maxRSS ${usage.maxRSS}\ncpuMs ${(usage.userCPUTime + usage.systemCPUTime) / 1000}\n`);
});
await import(pathToFileURL(cli).href);
