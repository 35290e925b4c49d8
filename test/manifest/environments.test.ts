// Environments on real files: variables files, overlays merged over the base (RFC 7386), adds, unknown targets, positions.
import { execFileSync } from 'node:child_process';
import { mkdir, mkdtemp, realpath, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { UsageError } from '../../src/core/errors.js';
import { MAX_MANIFEST_BYTES } from '../../src/core/manifest/file-bytes.js';
import type { DeploymentResource } from '../../src/core/model.js';
import { loadManifestDir, ManifestCache } from '../../src/observe/manifests.js';
import type { Environment } from '../../src/observe/environment.js';

const BASE = [
  'apiVersion: converge/v1',
  'kind: Deployment',
  'metadata:',
  '  name: support-${ENV}',
  '  annotations:',
  '    converge/drift: report',
  'spec:',
  '  source: external_docker',
  '  source_config:',
  '    build_command: make',
  '    resource_spec:',
  '      max_scale: ${MAX_SCALE:-1}',
  '      min_scale: 1',
  '  source_revision_config:',
  '    image_uri: docker.io/acme/support:1',
  '  secrets:',
  '    - name: OPENAI_API_KEY',
  '      valueFrom: { env: OPENAI_API_KEY }',
  '    - name: OTHER',
  '      valueFrom: { env: OTHER }',
  '',
].join('\n');

describe('environments: variables files and overlays', () => {
  let root: string;
  beforeEach(async () => {
    root = await mkdtemp(join(tmpdir(), 'converge-env-'));
    await mkdir(join(root, 'base'));
    await mkdir(join(root, 'prod'));
    await writeFile(join(root, 'base', 'support.yaml'), BASE);
    await writeFile(join(root, 'common.yaml'), 'ENV: dev\nMAX_SCALE: 2\n');
    await writeFile(join(root, 'prod.yaml'), 'ENV: prod\nMAX_SCALE: 8\nSECRET_ENV: PROD_OPENAI_KEY\n');
  });
  afterEach(async () => {
    await rm(root, { recursive: true, force: true });
  });

  const env = (vars: string[], overlays: string[]): Environment => ({
    vars: vars.map((v) => ({ path: join(root, v), label: v })),
    overlays: overlays.map((o) => ({ path: join(root, o), label: o })),
  });
  const load = (environment: Environment) =>
    loadManifestDir(join(root, 'base'), { allowLiteralSecrets: false, environment });

  it('later variables files win, and a number variable stays a number', async () => {
    const loaded = await load(env(['common.yaml', 'prod.yaml'], []));
    expect(loaded.diagnostics.filter((d) => d.severity === 'error')).toEqual([]);
    const support = loaded.resources[0] as DeploymentResource;
    expect(support.name).toBe('support-prod');
    expect(support.spec.source_config?.resource_spec).toEqual({ max_scale: 8, min_scale: 1 });
  });

  it('merges an overlay: maps merge, lists replace, null removes; positions point at the file that set the value', async () => {
    const overlay = [
      'kind: Deployment',
      'metadata:',
      '  name: support-${ENV}',
      '  annotations:',
      '    converge/drift: null',
      'spec:',
      '  source_config:',
      '    build_command: null',
      '    resource_spec:',
      '      min_scale: 2',
      '  secrets:',
      '    - name: OPENAI_API_KEY',
      '      valueFrom: { env: "${SECRET_ENV}" }',
      '',
    ].join('\n');
    await writeFile(join(root, 'prod', 'support.yaml'), overlay);
    const loaded = await load(env(['prod.yaml'], ['prod']));
    expect(loaded.diagnostics.filter((d) => d.severity === 'error')).toEqual([]);
    const support = loaded.resources[0] as DeploymentResource;
    expect(support.spec.source_config).toEqual({ resource_spec: { max_scale: 8, min_scale: 2 } });
    expect(support.spec.secrets).toEqual([{ name: 'OPENAI_API_KEY', from: { env: 'PROD_OPENAI_KEY' } }]);
    expect(support.driftPolicy).toBeUndefined();
    expect(support.location).toEqual({ file: 'support.yaml', line: 4, column: 9 });
    expect(support.secretLocations?.OPENAI_API_KEY).toEqual({ file: 'prod/support.yaml', line: 13, column: 25 });
    expect(loaded.contentId).not.toBe((await load(env(['prod.yaml'], []))).contentId);
  });

  it('a problem in a value the overlay set is reported in the overlay file', async () => {
    const overlay = [
      'kind: Deployment',
      'metadata: { name: support-prod }',
      'spec:',
      '  source_config:',
      '    resource_spec:',
      '      max_scale: lots',
      '',
    ].join('\n');
    await writeFile(join(root, 'prod', 'support.yaml'), overlay);
    const loaded = await load(env(['prod.yaml'], ['prod']));
    const errors = loaded.diagnostics.filter((d) => d.severity === 'error');
    expect(errors).toHaveLength(1);
    expect(errors[0]).toMatchObject({ file: 'prod/support.yaml', line: 6, column: 18 });
    expect(loaded.blocked.map((b) => b.name)).toEqual(['support-prod']);
  });

  it('adds a resource annotated converge/overlay: add, without the annotation', async () => {
    const added = [
      'apiVersion: converge/v1',
      'kind: Deployment',
      'metadata:',
      '  name: canary-${ENV}',
      '  annotations: { converge/overlay: add }',
      'spec:',
      '  source: external_docker',
      '  source_revision_config: { image_uri: "docker.io/acme/support:2" }',
      '',
    ].join('\n');
    await writeFile(join(root, 'prod', 'canary.yaml'), added);
    const loaded = await load(env(['prod.yaml'], ['prod']));
    expect(loaded.diagnostics.filter((d) => d.severity === 'error')).toEqual([]);
    expect(loaded.resources.map((r) => r.name).sort()).toEqual(['canary-prod', 'support-prod']);
    const canary = loaded.resources.find((r) => r.name === 'canary-prod')!;
    expect(canary.location).toEqual({ file: 'prod/canary.yaml', line: 4, column: 9 });
  });

  it('an overlay naming a resource the base lacks is an error at its file:line, and nothing is created', async () => {
    await writeFile(
      join(root, 'prod', 'typo.yaml'),
      'kind: Deployment\nmetadata:\n  name: suport-prod\nspec:\n  source_config: { resource_spec: { max_scale: 3 } }\n',
    );
    const loaded = await load(env(['prod.yaml'], ['prod']));
    const problem = loaded.diagnostics.find((d) => d.code === 'E_OVERLAY_TARGET');
    expect(problem).toMatchObject({ file: 'prod/typo.yaml', line: 3, column: 9, severity: 'error' });
    expect(problem!.message).toContain(
      'Deployment "suport-prod", which the base (the manifest directory) and the overlays before it do not declare; did you mean "support-prod"?',
    );
    expect(loaded.resources.map((r) => r.name)).toEqual(['support-prod']);
  });

  it('a kind typo in an overlay is an error at its kind, with the kind it most likely means', async () => {
    await writeFile(
      join(root, 'prod', 'support.yaml'),
      'kind: Deploymnet\nmetadata:\n  name: support-${ENV}\nspec:\n  source_config: { resource_spec: { max_scale: 3 } }\n',
    );
    const loaded = await load(env(['prod.yaml'], ['prod']));
    const errors = loaded.diagnostics.filter((d) => d.severity === 'error');
    expect(errors.map((d) => [d.file, d.line, d.column, d.code, d.message])).toEqual([
      [
        'prod/support.yaml',
        1,
        7,
        'E_KIND',
        'kind: "Deploymnet" is not a kind converge manages; did you mean "Deployment"?',
      ],
    ]);
    // The patch it meant to make is unknown: the resource of its name is blocked, never written from the base alone.
    expect(loaded.resources).toEqual([]);
    expect(loaded.blocked.map((b) => [b.kind, b.name, b.reason])).toEqual([
      [
        'Deployment',
        'support-prod',
        'the overlay prod/support.yaml:1:7 could not be read (kind: "Deploymnet" is not a kind converge manages; did you mean "Deployment"?); what it changes of this resource is unknown, so it is not written until that file is fixed',
      ],
    ]);
    // Without a kind at all, the overlay document is told it must name its resource.
    await writeFile(
      join(root, 'prod', 'support.yaml'),
      'metadata:\n  name: support-${ENV}\nspec:\n  source_config: { resource_spec: { max_scale: 3 } }\n',
    );
    const unnamed = await load(env(['prod.yaml'], ['prod']));
    expect(unnamed.diagnostics.filter((d) => d.severity === 'error').map((d) => d.code)).toEqual(['E_OVERLAY']);
  });

  it('an overlay file that cannot be read at all (here: saved as Latin-1) blocks every resource, since what it changes is unknown', async () => {
    await writeFile(
      join(root, 'base', 'other.yaml'),
      'apiVersion: converge/v1\nkind: Deployment\nmetadata:\n  name: other\nspec:\n  source: internal_template\n',
    );
    await writeFile(
      join(root, 'prod', 'support.yaml'),
      Buffer.concat([
        Buffer.from('kind: Deployment\nmetadata:\n  name: support-${ENV}\n  annotations:\n    team: caf'),
        Buffer.from([0xe9]),
        Buffer.from('\n'),
      ]),
    );
    const loaded = await load(env(['prod.yaml'], ['prod']));
    expect(
      loaded.diagnostics.filter((d) => d.severity === 'error').map((d) => [d.file, d.line, d.column, d.code]),
    ).toEqual([['prod/support.yaml', 5, 14, 'E_ENCODING']]);
    expect(loaded.resources).toEqual([]);
    expect(loaded.blocked.map((b) => b.name).sort()).toEqual(['other', 'support-prod']);
    expect(loaded.blocked[0]!.reason).toMatch(
      /^the overlay prod\/support.yaml:5:14 could not be read \(file is not valid UTF-8/,
    );
    // Fixed, both load again.
    await writeFile(
      join(root, 'prod', 'support.yaml'),
      'kind: Deployment\nmetadata:\n  name: support-${ENV}\n  annotations:\n    team: café\n',
    );
    const fixed = await load(env(['prod.yaml'], ['prod']));
    expect([fixed.resources.map((r) => r.name).sort(), fixed.blocked]).toEqual([['other', 'support-prod'], []]);
  });

  it('a missing variables file is one usage error naming it, not unset variables in the manifests', async () => {
    await expect(load(env(['common.yaml', 'dve.yaml'], []))).rejects.toThrow(
      new UsageError('variables file dve.yaml does not exist (--vars, setting vars); check the path'),
    );
  });

  it('a variables file that is not a regular file (a FIFO, a link to /dev/zero) or is too large is refused unread, naming it', async () => {
    execFileSync('mkfifo', [join(root, 'fifo.yaml')]);
    await symlink('/dev/zero', join(root, 'zero.yaml'));
    await writeFile(join(root, 'huge.yaml'), `# ${'x'.repeat(MAX_MANIFEST_BYTES)}\nENV: dev\n`);
    for (const file of ['fifo.yaml', 'zero.yaml', 'huge.yaml']) {
      const loaded = await load(env(['common.yaml', file], []));
      const refused = loaded.diagnostics.filter((d) => d.code === 'E_VARS_FILE');
      expect(refused, file).toEqual([expect.objectContaining({ file, line: 1, column: 1, severity: 'error' })]);
      expect(refused[0]!.message, file).toMatch(
        file === 'huge.yaml' ? /^variables file is larger than 1 MiB/ : /^variables file is not a regular file/,
      );
    }
  });

  it('an unset variable names the files read and the one that could not be read', async () => {
    execFileSync('mkfifo', [join(root, 'fifo.yaml')]);
    await writeFile(join(root, 'other.yaml'), 'X: 1\n');
    const loaded = await load(env(['other.yaml', 'fifo.yaml'], []));
    expect(loaded.diagnostics.find((d) => d.code === 'E_VARIABLE_UNSET')?.message).toContain(
      'variable ENV is not set (variables files read: other.yaml; not read: fifo.yaml (see its error))',
    );
    const alone = await load(env(['fifo.yaml'], []));
    expect(alone.diagnostics.find((d) => d.code === 'E_VARIABLE_UNSET')?.message).toContain(
      'variable ENV is not set (no variables file read; not read: fifo.yaml (see its error))',
    );
  });

  it('a value of the wrong type set by a variable names the variables file and line that set it', async () => {
    await writeFile(join(root, 'prod.yaml'), 'ENV: prod\n# the scale\nMAX_SCALE: lots\n');
    const loaded = await load(env(['common.yaml', 'prod.yaml'], []));
    const errors = loaded.diagnostics.filter((d) => d.severity === 'error');
    expect(errors).toHaveLength(1);
    expect(errors[0]).toMatchObject({ file: 'support.yaml', line: 12, column: 18 });
    expect(errors[0]!.message).toBe(
      'spec.source_config.resource_spec.max_scale: expected a number, got a string (the value of variable MAX_SCALE, set at prod.yaml:3:12)',
    );
  });

  it('a value of the wrong type set by a variable in an overlay names the variables file too', async () => {
    await writeFile(join(root, 'prod.yaml'), 'ENV: prod\nMIN: lots\n');
    const overlay = [
      'kind: Deployment',
      'metadata: { name: support-prod }',
      'spec:',
      '  source_config:',
      '    resource_spec:',
      '      min_scale: ${MIN}',
      '',
    ].join('\n');
    await writeFile(join(root, 'prod', 'support.yaml'), overlay);
    const loaded = await load(env(['prod.yaml'], ['prod']));
    const errors = loaded.diagnostics.filter((d) => d.severity === 'error');
    expect(errors).toHaveLength(1);
    expect(errors[0]).toMatchObject({ file: 'prod/support.yaml', line: 6, column: 18 });
    expect(errors[0]!.message).toContain('(the value of variable MIN, set at prod.yaml:2:6)');
  });

  it('an overlay does not follow a link out of its directory: a warning names it, nothing declared there is patched or added', async () => {
    const outside = join(root, 'elsewhere');
    await mkdir(outside);
    const add = [
      'apiVersion: converge/v1',
      'kind: Deployment',
      'metadata:',
      '  name: from-outside',
      '  annotations: { converge/overlay: add }',
      'spec:',
      '  source: internal_template',
      '',
    ].join('\n');
    await writeFile(join(outside, 'add.yaml'), add);
    await writeFile(
      join(outside, 'patch.yaml'),
      [
        'kind: Deployment',
        'metadata: { name: support-prod }',
        'spec:',
        '  source_config:',
        '    resource_spec:',
        '      max_scale: 9',
        '',
      ].join('\n'),
    );
    await symlink(outside, join(root, 'prod', 'linked'));
    await symlink(join(outside, 'add.yaml'), join(root, 'prod', 'add.yaml'));
    const loaded = await load(env(['prod.yaml'], ['prod']));
    expect(loaded.resources.map((r) => r.name)).toEqual(['support-prod']);
    expect((loaded.resources[0] as DeploymentResource).spec.source_config?.resource_spec).toMatchObject({
      max_scale: 8,
    });
    const warnings = loaded.diagnostics.filter((d) => d.code === 'W_LINK_OUTSIDE');
    expect(warnings.map((d) => `${d.file} ${d.severity}`)).toEqual(['prod/add.yaml warning', 'prod/linked warning']);
    expect(warnings[1]!.message).toContain(
      `symbolic link to ${await realpath(outside)}, outside the overlay directory: not followed`,
    );
  });

  it('a parse cache (the daemon) parses again when the variables change, the bytes of the manifest unchanged', async () => {
    const cache = new ManifestCache();
    const environment = env(['common.yaml'], []);
    const first = await loadManifestDir(join(root, 'base'), { allowLiteralSecrets: false, environment, cache });
    expect((first.resources[0] as DeploymentResource).spec.source_config?.resource_spec).toMatchObject({
      max_scale: 2,
    });
    await writeFile(join(root, 'common.yaml'), 'ENV: dev\nMAX_SCALE: 7\n');
    const second = await loadManifestDir(join(root, 'base'), { allowLiteralSecrets: false, environment, cache });
    expect((second.resources[0] as DeploymentResource).spec.source_config?.resource_spec).toMatchObject({
      max_scale: 7,
    });
  });

  it('a missing overlay directory is one usage error naming it', async () => {
    await expect(load(env([], ['nowhere']))).rejects.toThrow('overlay nowhere: directory');
  });
});
