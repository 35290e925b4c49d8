// The README's command blocks meant to be copied (each marked `<!-- runs as copied: ... -->`) run as a reader would
// paste them: in bash, from the repository root, with a bare environment (PATH and HOME only), `npx converge` being
// the built binary. Each must exit 0 and print no error.
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = resolve(import.meta.dirname, '../..');
const MAIN = join(process.env.CONVERGE_TEST_DIST!, 'cli', 'main.js');
const MARK = '<!-- runs as copied: test/e2e/readme-commands.test.ts -->';

/** The sh blocks right after a marker, as written in README.md. */
function copiedBlocks(): string[] {
  const text = readFileSync(join(ROOT, 'README.md'), 'utf8');
  return [
    ...text.matchAll(
      new RegExp(`${MARK.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\\n\`\`\`sh\\n([\\s\\S]*?)\\n\`\`\`\\n`, 'g'),
    ),
  ].map((m) => m[1]!);
}

function runBash(script: string): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((done) => {
    // `npx converge` is this checkout's converge: the built binary under test (npx would resolve the same package).
    const child = spawn(
      'bash',
      [
        '-e',
        '-c',
        `npx() { if [ "$1" = converge ]; then shift; node ${JSON.stringify(MAIN)} "$@"; else command npx "$@"; fi; }\n${script}`,
      ],
      {
        cwd: ROOT,
        env: { PATH: process.env.PATH, HOME: process.env.HOME },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    child.on('close', (code) => done({ code, stdout, stderr }));
  });
}

describe('README commands', () => {
  it('the marked blocks include the embedded plan of the examples', () => {
    const blocks = copiedBlocks();
    expect(blocks.length).toBeGreaterThanOrEqual(1);
    expect(
      blocks.some((b) =>
        b.includes(
          'npx converge plan examples/manifests --api-url embedded --emulator-state examples/emulator-state.yaml',
        ),
      ),
    ).toBe(true);
  });

  it('the plan without the variables still runs: it blocks what it cannot read and names the variables once, in one note', async () => {
    const r = await runBash(
      'npx converge plan examples/manifests --api-url embedded --emulator-state examples/emulator-state.yaml || echo "exit $?"',
    );
    expect(r.stdout).toMatch(/exit 1\n$/);
    const notes = r.stdout
      .split('\n')
      .filter((l) => l.startsWith('Note: ') && l.includes('environment variables are not set'));
    expect(notes).toEqual([
      'Note: 6 environment variables are not set: EXAMPLE_ANTHROPIC_API_KEY, EXAMPLE_OPENAI_API_KEY, EXAMPLE_SALESFORCE_TOKEN, EXAMPLE_SLACK_BOT_TOKEN, EXAMPLE_SLACK_CLIENT_SECRET, EXAMPLE_STRIPE_API_KEY; ' +
        "the manifests read secrets from them, so the resources that do are blocked (each reference is named at its file:line:column); set each to the secret's value where converge runs",
    ]);
  });

  it.each(copiedBlocks().map((block) => [block.split('\n').at(-1)!, block]))(
    'runs as copied: %s',
    async (_last, block) => {
      const r = await runBash(block);
      expect(r.code, r.stdout + r.stderr).toBe(0);
      expect(r.stdout + r.stderr).not.toMatch(/is not set|error|blocked Deployment|blocked OAuthProvider/i);
      if (block.includes('converge plan examples/manifests')) {
        expect(r.stdout).toMatch(
          /^Plan: \d+ to create, \d+ to update, \d+ to adopt, 1 suspended, 0 blocked, 5 orphaned, \d+ unchanged\./m,
        );
      }
    },
  );
});
