// action.yml and the example GitHub workflows, read by GitHub's own parser of their syntax (part of `npm run lint`;
// docs/pull-requests.md): `node scripts/check-workflow-syntax.mjs [FILE...]`, an action when the file is named
// action.yml, else a workflow; every error printed as FILE:LINE:COLUMN, exit 1 on any.
import { register } from 'node:module';
import { readdirSync, readFileSync } from 'node:fs';
import { basename, dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

// @actions/workflow-parser imports its JSON schemas without `with { type: 'json' }`, which Node refuses (its bundled
// users never see it): this load hook adds the attribute to those imports.
const HOOK = `export async function load(url, context, next) {
  if (url.endsWith('.json') && url.includes('/@actions/workflow-parser/')) return next(url, { ...context, importAttributes: { type: 'json' } });
  return next(url, context);
}`;
register(`data:text/javascript,${encodeURIComponent(HOOK)}`);
const { NoOperationTraceWriter, parseWorkflow } = await import('@actions/workflow-parser');
const { parseAction } = await import('@actions/workflow-parser/actions/index');

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const DEFAULT_FILES = [
  'action.yml',
  ...readdirSync(join(ROOT, 'examples/ci'))
    .filter((f) => f.endsWith('.yml') && !f.startsWith('.'))
    .map((f) => join('examples/ci', f)),
];

const files =
  process.argv.length > 2 ? process.argv.slice(2).map((f) => resolve(f)) : DEFAULT_FILES.map((f) => join(ROOT, f));
let problems = 0;
for (const file of files) {
  const entry = { name: relative(process.cwd(), file), content: readFileSync(file, 'utf8') };
  const parse = basename(file) === 'action.yml' || basename(file) === 'action.yaml' ? parseAction : parseWorkflow;
  const result = parse(entry, new NoOperationTraceWriter());
  for (const error of result.context.errors.getErrors()) {
    problems += 1;
    console.error(error.message);
  }
}
if (problems > 0) {
  console.error(`${problems} problem${problems === 1 ? '' : 's'} in GitHub workflow syntax`);
  process.exit(1);
}
console.log(
  `${files.length} files in valid GitHub workflow syntax (${files.map((f) => relative(ROOT, f)).join(', ')})`,
);
