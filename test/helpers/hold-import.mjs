// Test-only preload (`node --import`): holds the import of the module whose URL ends with HOLD_IMPORT_MODULE until
// the file HOLD_IMPORT_UNTIL exists, so a test sees a process between two steps of its start on its own signal
// (test/e2e/startup-health.test.ts: `converge run` with its status port bound and the daemon not loaded yet).
import { existsSync } from 'node:fs';
import { register } from 'node:module';
import { setTimeout as sleep } from 'node:timers/promises';
import { isMainThread } from 'node:worker_threads';

// Loaded twice: on the main thread it registers itself; on the loader hooks' thread it is the hook below.
if (isMainThread) register(import.meta.url);

/** Node's resolve hook: resolves as usual; the held module's resolution waits for the file. */
export async function resolve(specifier, context, nextResolve) {
  const resolved = await nextResolve(specifier, context);
  const { HOLD_IMPORT_MODULE: module, HOLD_IMPORT_UNTIL: until } = process.env;
  if (module && until && resolved.url.endsWith(module)) while (!existsSync(until)) await sleep(20);
  return resolved;
}
