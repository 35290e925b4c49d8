// Bundles the built CLI (`node scripts/bundle.mjs [DIST]`, after tsc): DIST/cli/main.js becomes the bundle's entry,
// its chunks and the compile worker go to DIST/bin/, and DIST/bin/chunks.json says which modules each chunk holds.
// One file per chunk instead of one per module spares Node's loader most of a command's start (docs/performance.md).
import { chmod, readdir, rename, rm, writeFile } from 'node:fs/promises';
import { join, relative, resolve } from 'node:path';
import { build } from 'rolldown';

const ROOT = resolve(import.meta.dirname, '..');
const dist = resolve(process.argv[2] ?? join(ROOT, 'dist'));
const out = join(dist, '.bundle');
/** Where the compile threads' script must sit: beside the chunk that starts them (src/observe/compile-threads.ts). */
const WORKER = 'bin/compile-worker.js';

/** A module's name in chunks.json: its path under DIST, node_modules/... for a package's file, rolldown's own as named. */
function moduleName(id) {
  // A module rolldown makes (its runtime helpers) has an id that starts with a NUL, not a path.
  if (id.startsWith('\0')) return id.slice(1);
  // DIST first: the e2e tier's build sits under node_modules/.cache itself (test/global-build.ts).
  if (id.startsWith(`${dist}/`)) return relative(dist, id);
  return id.slice(id.lastIndexOf('/node_modules/') + 1);
}

await rm(out, { recursive: true, force: true });
const { output } = await build({
  input: { main: join(dist, 'cli/main.js'), 'compile-worker': join(dist, 'observe/compile-worker.js') },
  platform: 'node',
  // Each command's module is still imported only when it runs (src/cli/commands/index.ts): a dynamic import is a chunk.
  output: {
    dir: out,
    format: 'esm',
    sourcemap: true,
    entryFileNames: (chunk) => (chunk.name === 'main' ? 'cli/main.js' : WORKER),
    chunkFileNames: 'bin/[name]-[hash].js',
  },
  logLevel: 'warn',
});
const chunks = output.filter((item) => item.type === 'chunk');
const starter = chunks.find((chunk) => chunk.moduleIds.some((id) => id.endsWith('/observe/compile-threads.js')));
if (!starter?.fileName.startsWith('bin/')) {
  throw new Error(`observe/compile-threads.js is in ${starter?.fileName ?? 'no chunk'}, not beside ${WORKER}`);
}
const manifest = Object.fromEntries(chunks.map((chunk) => [chunk.fileName, chunk.moduleIds.map(moduleName).sort()]));
await writeFile(join(out, 'bin', 'chunks.json'), `${JSON.stringify(manifest, null, 1)}\n`);
// The bundle replaces tsc's main.js; tsc's other modules stay for what imports them (the benchmarks, in-process tests).
await rm(join(dist, 'bin'), { recursive: true, force: true });
await rename(join(out, 'bin'), join(dist, 'bin'));
for (const name of await readdir(join(out, 'cli'))) await rename(join(out, 'cli', name), join(dist, 'cli', name));
await rm(out, { recursive: true, force: true });
await chmod(join(dist, 'cli', 'main.js'), 0o755);
