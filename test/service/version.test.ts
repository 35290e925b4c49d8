// converge's version: found in the nearest package.json named "converge", past stub package.json files.
import { mkdirSync, mkdtempSync, rmSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { DEFAULTS } from '../../src/service/transport.js';
import { packageVersion, VERSION } from '../../src/service/version.js';

/** Temporary directories of this file's tests, removed after each test. */
const scratch: string[] = [];
afterEach(() => {
  for (const dir of scratch.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function scratchDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'converge-version-'));
  scratch.push(dir);
  return dir;
}

describe('packageVersion', () => {
  it('is the version of the repository package.json, which the client sends as User-Agent', () => {
    const manifest = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
      version: string;
    };
    expect(VERSION).toBe(manifest.version);
    expect(DEFAULTS.userAgent).toBe(`converge/${manifest.version}`);
  });

  it('walks past a stub package.json and one of another package to the one named converge', () => {
    const root = scratchDir();
    writeFileSync(join(root, 'package.json'), JSON.stringify({ name: 'converge', version: '9.8.7' }));
    const build = join(root, 'node_modules', '.cache', 'run');
    mkdirSync(join(build, 'dist', 'service'), { recursive: true });
    writeFileSync(join(root, 'node_modules', 'package.json'), JSON.stringify({ name: 'other', version: '1.0.0' }));
    writeFileSync(join(build, 'package.json'), '{ "type": "module" }\n');
    writeFileSync(join(build, 'dist', 'package.json'), 'not json');
    expect(packageVersion(join(build, 'dist', 'service'))).toBe('9.8.7');
  });

  it('fails with a code when no package.json above is converge', () => {
    const dir = scratchDir();
    writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: 'converge' }));
    expect(() => packageVersion(dir)).toThrow(expect.objectContaining({ code: 'E_VERSION' }));
  });
});
