// Writes test/e2e-durations.json from a vitest JSON report: each e2e file's seconds, the order test/sequencer.ts runs them in.
// Usage: npx vitest run --reporter=json --outputFile=report.json && node scripts/test-durations.mjs report.json
import { readFileSync, writeFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';

const ROOT = resolve(import.meta.dirname, '..');
const OUT = join(ROOT, 'test', 'e2e-durations.json');

const report = process.argv[2];
if (!report) {
  console.error('usage: node scripts/test-durations.mjs REPORT.json (a vitest --reporter=json output of a whole run)');
  process.exit(2);
}
const { testResults } = JSON.parse(readFileSync(report, 'utf8'));
const seconds = {};
for (const file of testResults) {
  const path = relative(ROOT, file.name);
  if (path.startsWith('test/e2e/')) seconds[path] = Math.round((file.endTime - file.startTime) / 1000);
}
const sorted = Object.fromEntries(Object.entries(seconds).sort(([a], [b]) => a.localeCompare(b)));
writeFileSync(OUT, `${JSON.stringify(sorted, null, 2)}\n`);
console.log(`${Object.keys(sorted).length} e2e files written to ${relative(ROOT, OUT)}`);
