// Comments cite only files in this repository (part of `npm run lint`): every `*.md` named in src/, test/ or scripts/
// is a file of the repository, and no path points above it or into a folder beside it (the patterns in OUTSIDE below).
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const FOLDERS = ['src', 'test', 'scripts'];
const SKIP = new Set(['node_modules', 'dist', '.git']);
const CODE = /\.(ts|mts|cts|js|mjs|cjs)$/;
/** A document named in the text: a path or a bare file name ending in .md. */
const MARKDOWN = /(?<![\w./-])((?:\.{1,2}\/)*[\w.-]+(?:\/[\w.-]+)*\.md)\b/g;
/** Places outside the repository that comments used to cite. */
const OUTSIDE = /(\/work\/[\w./-]+|(?<![\w@-])shared\/(?:spec|docs)\b[\w./-]*|\.\.\/spec\/[\w./-]*)/g;

function walk(dir, out) {
  for (const name of readdirSync(dir)) {
    if (SKIP.has(name)) continue;
    const path = join(dir, name);
    if (statSync(path).isDirectory()) walk(path, out);
    else if (CODE.test(name)) out.push(path);
  }
  return out;
}

/** Every file name of the repository's documents, for bare names (README.md, ANALYSIS.md). */
function markdownNames() {
  const names = new Set();
  const visit = (dir) => {
    for (const name of readdirSync(dir)) {
      if (SKIP.has(name)) continue;
      const path = join(dir, name);
      if (statSync(path).isDirectory()) visit(path);
      else if (name.endsWith('.md')) names.add(name);
    }
  };
  visit(ROOT);
  return names;
}

function inRepository(path) {
  const rel = relative(ROOT, path);
  return !rel.startsWith('..') && existsSync(path);
}

function resolves(file, cited, names) {
  if (!cited.includes('/')) return names.has(cited);
  return inRepository(resolve(ROOT, cited)) || inRepository(resolve(dirname(file), cited));
}

const names = markdownNames();
const problems = [];
for (const folder of FOLDERS) {
  const dir = join(ROOT, folder);
  if (!existsSync(dir)) continue;
  for (const file of walk(dir, [])) {
    const lines = readFileSync(file, 'utf8').split('\n');
    lines.forEach((line, index) => {
      const where = `${relative(ROOT, file)}:${index + 1}`;
      for (const match of line.matchAll(MARKDOWN)) {
        if (!resolves(file, match[1], names))
          problems.push(`${where}:${match.index + 1}: "${match[1]}" is not a file of this repository`);
      }
      for (const match of line.matchAll(OUTSIDE))
        problems.push(`${where}:${match.index + 1}: "${match[1]}" points outside the repository`);
    });
  }
}
if (problems.length > 0) {
  for (const problem of problems) console.error(problem);
  console.error(
    `\n${problems.length} citation(s) of documents outside the repository. Cite the repository's own docs instead ` +
      '(docs/against-the-real-service.md: what the service does; docs/contracts.md: design decisions; docs/architecture.md).',
  );
  process.exit(1);
}
console.log(`comment citations: every document named in ${FOLDERS.join(', ')} is a file of this repository`);
