// Names what a build of src/ was made from: `node scripts/build-stamp.mjs` writes dist/.source-hash after `npm run build`;
// `--check DIR` exits 0 when DIR/.source-hash names the sources as they are now (test/global-build.ts then copies DIR).
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';

const ROOT = resolve(import.meta.dirname, '..');
const STAMP = '.source-hash';

/** Every file a build reads besides its dependencies' code: src/, the compiler's and the bundler's configuration and versions. */
function sourceHash() {
  const hash = createHash('sha256');
  const files = readdirSync(join(ROOT, 'src'), { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile())
    .map((entry) => join(entry.parentPath, entry.name))
    .sort();
  const build = ['tsconfig.json', 'tsconfig.build.json', 'scripts/bundle.mjs'].map((file) => join(ROOT, file));
  for (const file of [...files, ...build]) {
    hash
      .update(`${relative(ROOT, file)}\0`)
      .update(readFileSync(file))
      .update('\0');
  }
  for (const tool of ['typescript', 'rolldown']) {
    const { version } = JSON.parse(readFileSync(join(ROOT, 'node_modules', tool, 'package.json'), 'utf8'));
    hash.update(`${tool} ${version}\n`);
  }
  return hash.digest('hex');
}

const check = process.argv.indexOf('--check');
if (check >= 0) {
  const dir = resolve(process.argv[check + 1] ?? 'dist');
  let stamped = '';
  try {
    stamped = readFileSync(join(dir, STAMP), 'utf8').trim();
  } catch {
    process.exit(1);
  }
  process.exit(stamped === sourceHash() ? 0 : 1);
}
writeFileSync(join(ROOT, 'dist', STAMP), `${sourceHash()}\n`);
