// The heap the manifest watcher (src/daemon/watch/watcher.ts) retains over N manifest files in the bench's layout
// (100 a folder, test/bench/lib/fixtures.mjs), its inotify watches and its start time; then one edit through it.
// Run after `npm run build`: node --expose-gc test/bench/watcher-memory.mjs [N] (default 10,000).
import { readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { removeDir, ROOT, tempDir } from './lib/common.mjs';
import { manifestPath, writeManifests } from './lib/fixtures.mjs';

const { watchManifestDir } = await import(pathToFileURL(join(ROOT, 'dist', 'daemon', 'watch', 'watcher.js')).href);

/** The heap in use after full collections (the watcher's garbage from its crawl is not what it holds). */
async function settledHeap() {
  for (let i = 0; i < 4; i++) {
    globalThis.gc();
    await new Promise((resolve) => setImmediate(resolve));
  }
  return process.memoryUsage().heapUsed;
}

/** The inotify watches this process holds: one `inotify wd:` line per watched inode in /proc/self/fdinfo. */
async function inotifyWatches() {
  let count = 0;
  for (const fd of await readdir('/proc/self/fdinfo')) {
    const info = await readFile(join('/proc/self/fdinfo', fd), 'utf8').catch(() => '');
    count += info.split('\n').filter((line) => line.startsWith('inotify wd:')).length;
  }
  return count;
}

const mb = (bytes) => (bytes / 1024 / 1024).toFixed(1);

async function main() {
  if (typeof globalThis.gc !== 'function') throw new Error('run with node --expose-gc');
  const n = Number(process.argv[2] ?? 10_000);
  const dir = await tempDir(`watcher-memory-${n}`);
  try {
    await writeManifests(dir, n);
    const folders = (await readdir(dir)).length;
    const watchesBefore = await inotifyWatches();
    const before = await settledHeap();
    const bursts = [];
    const started = performance.now();
    const watcher = await watchManifestDir({ dir, debounceMs: 100, onBurst: (burst) => bursts.push(burst) });
    const readyMs = performance.now() - started;
    const after = await settledHeap();
    const watches = (await inotifyWatches()) - watchesBefore;
    console.log(`files ${n} in ${folders} folders`);
    console.log(`watch ready in ${Math.round(readyMs)} ms`);
    console.log(
      `heap used ${mb(before)} MB before, ${mb(after)} MB after: the watcher retains ${mb(after - before)} MB`,
    );
    console.log(`inotify watches ${watches}; chokidar's getWatched() entries ${watcher.watchedCount()}`);
    // The watch still sees an edit of a file deep in the tree, in place.
    const edited = manifestPath(n - 1);
    const edit = performance.now();
    await writeFile(join(dir, edited), `${await readFile(join(dir, edited), 'utf8')}# edited\n`);
    while (!bursts.some((burst) => burst.paths.includes(edited))) {
      if (performance.now() - edit > 10_000) throw new Error(`no burst named ${edited} within 10 s`);
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    console.log(`an in-place write of ${edited} reached a burst in ${Math.round(performance.now() - edit)} ms`);
    await watcher.close();
  } finally {
    await removeDir(dir);
  }
}

await main();
