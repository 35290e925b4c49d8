// A memory cgroup for the benchmarks' daemons (`npm run bench -- --daemon-memory MIB`): the limit a container gives, on Linux, as root.
import { existsSync, readFileSync, rmdirSync, writeFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';

/**
 * Where this process's memory cgroup is: cgroup v1's `memory` controller (its line in /proc/self/cgroup under
 * /sys/fs/cgroup/memory), else cgroup v2's unified tree (the `0::` line under /sys/fs/cgroup); undefined when neither
 * has a memory controller here.
 */
function ownMemoryCgroup() {
  const lines = readFileSync('/proc/self/cgroup', 'utf8').split('\n');
  const v1 = lines.map((l) => /^\d+:([^:]*):(.*)$/.exec(l)).find((m) => m && m[1].split(',').includes('memory'));
  if (v1 && existsSync('/sys/fs/cgroup/memory')) return { version: 1, dir: join('/sys/fs/cgroup/memory', v1[2]) };
  const v2 = lines.map((l) => /^0::(.*)$/.exec(l)).find(Boolean);
  const root = existsSync('/sys/fs/cgroup/cgroup.controllers') ? '/sys/fs/cgroup' : '/sys/fs/cgroup/unified';
  if (
    v2 &&
    existsSync(join(root, 'cgroup.controllers')) &&
    /\bmemory\b/.test(readFileSync(join(root, 'cgroup.controllers'), 'utf8'))
  )
    return { version: 2, dir: join(root, v2[1]) };
  return undefined;
}

/**
 * Creates a child memory cgroup of `mib` MiB beside this process's (it stays out of it: only the daemons are started
 * in it, lib/daemon-child.mjs) and returns its directory and a remove() for the end; throws a message that says what
 * is missing where it cannot (not Linux, no memory controller, not root).
 */
export function createMemoryCgroup(mib) {
  const own = process.platform === 'linux' ? ownMemoryCgroup() : undefined;
  if (!own) throw new Error('--daemon-memory: no memory cgroup controller here (Linux cgroup v1 or v2 is needed)');
  const dir = join(own.dir, `converge-bench-${process.pid}`);
  try {
    mkdirSync(dir);
    writeFileSync(join(dir, own.version === 1 ? 'memory.limit_in_bytes' : 'memory.max'), String(mib * 1024 * 1024));
  } catch (error) {
    throw new Error(
      `--daemon-memory: cannot create the memory cgroup ${dir} (${error.code ?? error.message}); run as root`,
      { cause: error },
    );
  }
  return {
    dir,
    /** Removes the cgroup; its processes have exited (a cgroup with processes cannot be removed). */
    remove: () => rmdirSync(dir),
  };
}
