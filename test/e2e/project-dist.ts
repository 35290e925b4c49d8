// The project's dist/ from the run's build for child processes (test/global-build.ts): the same compile of the same
// sources with another outDir, so copying it (source maps re-pointed) stands for a second `tsc -p tsconfig.build.json`.
import { copyFile, mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import { dirname, join, relative, resolve } from 'node:path';

/** Copies every file of the build `from` into `to`; each source map's `sources` are made relative to its new place. */
export async function copyBuild(from: string, to: string): Promise<void> {
  const entries = await readdir(from, { recursive: true, withFileTypes: true });
  for (const entry of entries) {
    if (!entry.isFile()) continue;
    const source = join(entry.parentPath, entry.name);
    const target = join(to, relative(from, source));
    await mkdir(dirname(target), { recursive: true });
    if (!entry.name.endsWith('.map')) {
      await copyFile(source, target);
      continue;
    }
    const map = JSON.parse(await readFile(source, 'utf8')) as { sourceRoot?: string; sources: string[] };
    const base = resolve(dirname(source), map.sourceRoot ?? '');
    map.sources = map.sources.map((s) => relative(resolve(dirname(target), map.sourceRoot ?? ''), resolve(base, s)));
    await writeFile(target, JSON.stringify(map));
  }
}
