// Text names a file as it opens from the working directory (DIR as typed plus the path in it), JSON relative to DIR; validate FILE... for pre-commit.
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { startEmulator } from '../../src/emulator/server.js';
import { deploymentYaml, externalDockerSpec, seedWith, writes } from '../helpers/apply.js';
import { runCapture } from '../helpers/cli.js';
import { dropPrefix, REDIS_URL, testPrefix } from '../helpers/redis.js';

const ENV = { PATH: process.env.PATH };
/** `replicas` is no field of spec: an error at line 7, column 3 of the file. */
const BAD =
  'apiVersion: converge/v1\nkind: Deployment\nmetadata:\n  name: bad\nspec:\n  source: internal_template\n  replicas: 2\n';
const good = (name: string) =>
  `apiVersion: converge/v1\nkind: Deployment\nmetadata:\n  name: ${name}\nspec:\n  source: internal_template\n`;
const UNKNOWN = 'error: unknown field "replicas" in spec';

let root: string;
beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), 'converge-paths-'));
  await mkdir(join(root, 'envvar'));
  await writeFile(join(root, 'envvar/a.yaml'), BAD);
  await writeFile(join(root, 'envvar/b.yaml'), good('b'));
  await writeFile(join(root, 'envvar/c.yaml'), good('b'));
  await writeFile(join(root, 'envvar/notes.txt'), 'not a manifest\n');
});
afterEach(async () => {
  await rm(root, { recursive: true, force: true });
});

/** The `file:line:column` of each diagnostic line of a text output. */
function places(stdout: string): string[] {
  return stdout
    .split('\n')
    .map((line) => /^\s*(\S+:\d+:\d+): (?:error|warning):/.exec(line)?.[1])
    .filter((place): place is string => place !== undefined);
}

describe('paths in text output: the directory as typed plus the path in it', () => {
  it('validate DIR names envvar/a.yaml whether typed envvar, ./envvar/ or absolute; JSON keeps a.yaml', async () => {
    const cwd = { cwd: root };
    const typed = await runCapture(['validate', 'envvar'], ENV, cwd);
    expect(typed.code).toBe(1);
    expect(typed.stdout).toContain(`envvar/a.yaml:7:3: ${UNKNOWN}`);
    expect(places(typed.stdout)).toEqual(['envvar/a.yaml:7:3', 'envvar/b.yaml:4:9', 'envvar/c.yaml:4:9']);
    expect(places((await runCapture(['validate', './envvar/'], ENV, cwd)).stdout)).toEqual(places(typed.stdout));
    const absolute = await runCapture(['validate', join(root, 'envvar')], ENV, { cwd: tmpdir() });
    expect(places(absolute.stdout)).toEqual(
      ['a.yaml:7:3', 'b.yaml:4:9', 'c.yaml:4:9'].map((p) => join(root, 'envvar', p)),
    );
    // from inside the directory, `.`: the path in it alone
    expect(places((await runCapture(['validate', '.'], ENV, { cwd: join(root, 'envvar') })).stdout)).toEqual([
      'a.yaml:7:3',
      'b.yaml:4:9',
      'c.yaml:4:9',
    ]);
    const json = JSON.parse((await runCapture(['validate', 'envvar', '--output', 'json'], ENV, cwd)).stdout) as {
      files: string[];
      diagnostics: Array<{ file: string }>;
    };
    expect(json.files).toEqual(['a.yaml', 'b.yaml', 'c.yaml']);
    expect(json.diagnostics.map((d) => d.file)).toEqual(['a.yaml', 'b.yaml', 'c.yaml']);
  });

  it('a variables file beside the directory is named from the working directory too (prod.yaml, not ../prod.yaml)', async () => {
    await writeFile(join(root, 'prod.yaml'), 'SOURCE: [1,\n');
    const run = await runCapture(['validate', 'envvar', '--vars', 'prod.yaml'], ENV, { cwd: root });
    expect(run.code).toBe(1);
    const named = places(run.stdout);
    expect(named.filter((p) => !p.startsWith('envvar/')).map((p) => p.replace(/:\d+:\d+$/, ''))).toEqual(['prod.yaml']);
    const json = JSON.parse(
      (await runCapture(['validate', 'envvar', '--vars', 'prod.yaml', '-o', 'json'], ENV, { cwd: root })).stdout,
    ) as { diagnostics: Array<{ file: string }> };
    expect(json.diagnostics.map((d) => d.file)).toContain('../prod.yaml');
  });

  it('plan: text and markdown name envvar/a.yaml, JSON a.yaml', async () => {
    const base = ['plan', 'envvar', '--api-url', 'embedded'];
    const text = await runCapture(base, ENV, { cwd: root });
    expect(text.code).toBe(1);
    expect(text.stdout).toContain(`  envvar/a.yaml:7:3: ${UNKNOWN}`);
    const markdown = await runCapture([...base, '--output', 'markdown'], ENV, { cwd: root });
    expect(markdown.stdout).toContain('`envvar/a.yaml:7:3`');
    const json = JSON.parse((await runCapture([...base, '--output', 'json'], ENV, { cwd: root })).stdout) as {
      diagnostics: Array<{ file: string }>;
    };
    expect(json.diagnostics.map((d) => d.file)).toContain('a.yaml');
    expect(json.diagnostics.map((d) => d.file).some((f) => f.startsWith('envvar/'))).toBe(false);
  });

  it('plan --show names files from the directory the plan was made in, as plan DIR typed it; the saved plan keeps them relative', async () => {
    await rm(join(root, 'envvar/a.yaml'));
    await rm(join(root, 'envvar/c.yaml'));
    await writeFile(join(root, 'envvar/empty.yaml'), '# nothing yet\n');
    const made = await runCapture(['plan', './envvar', '--api-url', 'embedded', '--out', 'saved.plan'], ENV, {
      cwd: root,
    });
    expect(made.code, made.stderr).toBe(0);
    const saved = JSON.parse(await readFile(join(root, 'saved.plan'), 'utf8')) as {
      plan: { diagnostics: Array<{ file: string }> };
    };
    expect(saved.plan.diagnostics.map((d) => d.file)).toEqual(['empty.yaml']);
    for (const output of ['text', 'markdown']) {
      const shown = await runCapture(['plan', '--show', 'saved.plan', '--output', output], ENV, { cwd: root });
      expect(shown.stdout).toContain('envvar/empty.yaml:1:1');
    }
  });

  it('apply: the diagnostics and the refusal name envvar/broken.yaml; nothing is written', async () => {
    const emulator = await startEmulator({ seed: seedWith([]), buildMs: 0 });
    const prefix = testPrefix('paths');
    try {
      await rm(join(root, 'envvar'), { recursive: true });
      await mkdir(join(root, 'envvar'));
      await writeFile(
        join(root, 'envvar/good.yaml'),
        deploymentYaml('good', externalDockerSpec('docker.io/good:1', 1)),
      );
      await writeFile(
        join(root, 'envvar/broken.yaml'),
        deploymentYaml('broken', 'source: external_docker\nsurprise: 1'),
      );
      const run = await runCapture(
        ['apply', 'envvar', '--api-url', emulator.url, '--redis-url', REDIS_URL, '--redis-prefix', prefix],
        ENV,
        { cwd: root },
      );
      expect(run.code).toBe(1);
      expect(run.stdout).toMatch(/^ {2}envvar\/broken\.yaml:\d+:\d+: error: .*surprise/m);
      expect(run.stdout).toMatch(/Apply refused: nothing was written: envvar\/broken\.yaml:\d+:\d+ fails to load/);
      expect(writes(emulator.requestLog)).toEqual([]);
    } finally {
      await emulator.close();
      await dropPrefix(prefix);
    }
  });
});

describe('converge validate FILE...', () => {
  it('checks only the files given, each named as given; a good one exits 0', async () => {
    const run = await runCapture(['validate', 'envvar/b.yaml'], ENV, { cwd: root });
    expect(run).toEqual({ code: 0, stdout: '1 resource in 1 file, 0 errors\n', stderr: '' });
  });

  it('a bad file exits 1 naming it as given (normalized), and a name declared twice among the files is an error at each', async () => {
    const bad = await runCapture(['validate', './envvar/a.yaml', 'envvar/b.yaml'], ENV, { cwd: root });
    expect(bad.code).toBe(1);
    expect(bad.stdout).toBe(
      'envvar/a.yaml:7:3: error: unknown field "replicas" in spec; known fields: source, repository, integration, source_config, source_revision_config, secrets, secret_references\n' +
        '1 resource in 2 files, 1 error\n',
    );
    const twice = await runCapture(['validate', 'envvar/c.yaml', 'envvar/b.yaml'], ENV, { cwd: root });
    expect(twice.code).toBe(1);
    expect(places(twice.stdout)).toEqual(['envvar/b.yaml:4:9', 'envvar/c.yaml:4:9']);
    expect(twice.stdout).toContain(
      'envvar/b.yaml:4:9: error: Deployment "b" is declared 2 times (also at envvar/c.yaml:4:9)',
    );
    const json = JSON.parse(
      (await runCapture(['validate', 'envvar/b.yaml', join(root, 'envvar/a.yaml'), '-o', 'json'], ENV, { cwd: root }))
        .stdout,
    ) as { valid: boolean; files: string[] };
    expect(json).toMatchObject({ valid: false, files: [join(root, 'envvar/a.yaml'), 'envvar/b.yaml'] });
  });

  it('refuses a directory among files, a missing file, a file not named *.yaml and --overlay, each in one line', async () => {
    const cases: Array<[string[], string]> = [
      [
        ['envvar', 'envvar/b.yaml'],
        'converge validate: envvar is a directory: give one manifest directory, or manifest files, not both\n',
      ],
      [
        ['envvar/b.yaml', 'envvar/gone.yaml'],
        'converge validate: envvar/gone.yaml does not exist; give a manifest directory or manifest files (*.yaml, *.yml)\n',
      ],
      [
        ['envvar/b.yaml', 'envvar/notes.txt'],
        'converge validate: envvar/notes.txt is not a manifest file (*.yaml, *.yml); give only manifest files, or their directory\n',
      ],
      [
        ['envvar/b.yaml', '--overlay', 'envvar'],
        'converge validate: --overlay needs the whole manifest directory: give the directory instead of files\n',
      ],
    ];
    for (const [args, line] of cases)
      expect(await runCapture(['validate', ...args], ENV, { cwd: root })).toEqual({
        code: 1,
        stdout: '',
        stderr: line,
      });
  });

  it("--dir DIR: a file is checked in its directory's context (a name another file declares), only its findings reported", async () => {
    // b.yaml alone is valid; in envvar, c.yaml declares b too: an error at b.yaml, named from the working directory.
    const run = await runCapture(['validate', 'envvar/b.yaml', '--dir', 'envvar'], ENV, { cwd: root });
    expect(run.code).toBe(1);
    expect(run.stdout).toBe(
      'envvar/b.yaml:4:9: error: Deployment "b" is declared 2 times (also at c.yaml:4:9); names must be unique across the manifest directory: keep one\n0 resources in 1 file, 1 error\n',
    );
    // a.yaml's own error is not b.yaml's: not reported; JSON names the file relative to DIR.
    const json = JSON.parse(
      (await runCapture(['validate', './envvar/b.yaml', '--dir', 'envvar', '-o', 'json'], ENV, { cwd: root })).stdout,
    ) as { files: string[]; diagnostics: Array<{ file: string }> };
    expect([json.files, json.diagnostics.map((d) => d.file)]).toEqual([['b.yaml'], ['b.yaml']]);
    await writeFile(join(root, 'envvar/c.yaml'), good('c'));
    expect(
      await runCapture(['validate', 'envvar/b.yaml', 'envvar/c.yaml', '--dir', 'envvar'], ENV, { cwd: root }),
    ).toEqual({ code: 0, stdout: '2 resources in 2 files, 0 errors\n', stderr: '' });
    await mkdir(join(root, 'other'));
    await writeFile(join(root, 'other/d.yaml'), good('d'));
    const outside = await runCapture(['validate', 'other/d.yaml', '--dir', 'envvar'], ENV, { cwd: root });
    expect(outside).toEqual({
      code: 1,
      stdout: '',
      stderr: 'converge validate: other/d.yaml is not in --dir envvar; give files of that manifest directory\n',
    });
  });

  it('--help shows DIR|FILE..., and completion offers paths for its argument', async () => {
    expect((await runCapture(['validate', '--help'], ENV)).stdout).toContain(
      'Usage: converge validate DIR|FILE... [--dir DIR] [--vars FILE]',
    );
    const bash = (await runCapture(['completion', 'bash'], ENV)).stdout;
    expect(bash).toMatch(/ {4}validate\)\n(?: {6}.*\n)*? {6}argument="file"\n/);
    // zsh completes every FILE, not the first only
    const zsh = (await runCapture(['completion', 'zsh'], ENV)).stdout;
    const arm = zsh.slice(zsh.indexOf('        validate)\n'));
    expect(arm.slice(0, arm.indexOf('\n          ;;'))).toMatch(/'\*:argument:_files'$/);
  });
});
