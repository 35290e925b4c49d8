// The compile pool's threads (src/observe/compile-pool.ts) with a stand-in worker: results in file order across
// batches and threads, a thread that dies is an E_COMPILE diagnostic for its files (never a crash), close() ends them, and
// threads started before the parse options are known compile with the options the pool that takes them is given.
import { describe, expect, it } from 'vitest';
import { CompilePool, compileFiles } from '../../src/observe/compile-pool.js';
import { CompileThreads } from '../../src/observe/compile-threads.js';

const ECHO = new URL('../helpers/echo-compile-worker.mjs', import.meta.url);

/** `count` files of about 10 KiB each (several per batch, many batches), named by number. */
function files(count: number, crashAt?: number): Array<{ file: string; bytes: Uint8Array }> {
  return Array.from({ length: count }, (_, i) => ({
    file: i === crashAt ? 'crash.yaml' : `f${i}.yaml`,
    bytes: new TextEncoder().encode(`body-${i}`.padEnd(10_000, '.')),
  }));
}

describe('CompilePool', () => {
  it('hands back one result per file in file order, from batches spread over its threads', async () => {
    const input = files(40);
    const pool = CompilePool.start(
      { allowLiteralSecrets: true },
      { worker: ECHO, threads: 3, thisThreadCompiles: false },
    )!;
    try {
      const results = await pool.compile(input);
      expect(results.map((r) => r.diagnostics[0]!.file)).toEqual(input.map((f) => f.file));
      expect(results.map((r) => r.diagnostics[0]!.message.replace(/\.+/, ''))).toEqual(
        input.map((_, i) => `body-${i} true`),
      );
    } finally {
      await pool.close();
    }
  });

  it('this thread compiles batches too: the files it takes are compiled here, the others by the thread, all in file order', async () => {
    const input = files(40);
    const pool = CompilePool.start({ allowLiteralSecrets: true }, { worker: ECHO, threads: 1 })!;
    try {
      const results = await pool.compile(input);
      expect(results.map((r) => r.diagnostics[0]!.file)).toEqual(input.map((f) => f.file));
      // The stand-in worker echoes each file; this thread compiles it for real (not a manifest: an error of its own).
      const echoed = results.filter((r) => r.diagnostics[0]!.message.startsWith('body-'));
      const here = results.filter((r) => !r.diagnostics[0]!.message.startsWith('body-'));
      expect(echoed.length).toBeGreaterThan(0);
      expect(here.length).toBeGreaterThan(0);
      expect(here.every((r) => r.diagnostics[0]!.code !== 'E_COMPILE')).toBe(true);
    } finally {
      await pool.close();
    }
  });

  it('a thread that dies fails only the files it held, each with E_COMPILE at its first line; the others are compiled', async () => {
    const input = files(40, 13);
    const pool = CompilePool.start(
      { allowLiteralSecrets: false },
      { worker: ECHO, threads: 2, thisThreadCompiles: false },
    )!;
    try {
      const results = await pool.compile(input);
      expect(results).toHaveLength(40);
      const failed = results.filter((r) => r.diagnostics[0]!.code === 'E_COMPILE');
      expect(failed.map((r) => r.diagnostics[0]!.file)).toContain('crash.yaml');
      expect(failed[0]!.diagnostics[0]).toMatchObject({ severity: 'error', line: 1, column: 1 });
      expect(failed[0]!.diagnostics[0]!.message).toMatch(/worker thread stopped, exit code 3/);
      // Files of the dead thread's other batch in flight fail too; every other file has its own answer.
      expect(failed.length).toBeLessThan(20);
      results.forEach((r, i) => {
        if (r.diagnostics[0]!.code !== 'E_COMPILE')
          expect(r.diagnostics[0]!.message).toMatch(new RegExp(`^body-${i}\\.`));
      });
    } finally {
      await pool.close();
    }
  });

  it('without its worker script (run from the TypeScript source) there is no pool, and compileFiles compiles in this thread', async () => {
    expect(
      CompilePool.start({ allowLiteralSecrets: false }, { worker: new URL('./no-such-worker.js', import.meta.url) }),
    ).toBeUndefined();
    expect(CompilePool.start({ allowLiteralSecrets: false }, { worker: ECHO, threads: 0 })).toBeUndefined();
    const text =
      'apiVersion: converge/v1\nkind: Deployment\nmetadata: { name: a }\nspec: { source: codehost, repository: acme/a, source_config: { deployment_type: dev } }\n';
    const [result] = await compileFiles([{ file: 'a.yaml', bytes: new TextEncoder().encode(text) }], {
      allowLiteralSecrets: false,
    });
    expect(result!.resources.map((r) => r.name)).toEqual(['a']);
  });

  it('threads started before the options are known compile with the options of the pool that takes them', async () => {
    const threads = CompileThreads.start({ worker: ECHO, threads: 2 })!;
    const pool = CompilePool.taking(threads, { allowLiteralSecrets: true }, { thisThreadCompiles: false });
    try {
      const input = files(40);
      const results = await pool.compile(input);
      expect(results.map((r) => r.diagnostics[0]!.message.replace(/\.+/, ''))).toEqual(
        input.map((_, i) => `body-${i} true`),
      );
    } finally {
      await pool.close();
    }
    // Closing the pool closed the threads it took; closing them again is no error.
    expect(threads.threads.every((t) => t.failed?.includes('exit code'))).toBe(true);
    await threads.close();
  });
});
