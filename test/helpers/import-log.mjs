// Test-only preload (`node --import`): appends the URL of every module the process resolves to the file named by
// IMPORT_LOG, so a test can say what a command loaded (test/e2e/startup-imports.test.ts).
import { appendFileSync } from 'node:fs';
import { register } from 'node:module';
import { isMainThread } from 'node:worker_threads';

// Loaded twice: on the main thread it registers itself; on the loader hooks' thread it is the hook below.
if (isMainThread) register(import.meta.url);

/** Node's resolve hook: resolves as usual and logs the result. */
export async function resolve(specifier, context, nextResolve) {
  const resolved = await nextResolve(specifier, context);
  if (process.env.IMPORT_LOG) appendFileSync(process.env.IMPORT_LOG, `${resolved.url}\n`);
  return resolved;
}
