// Variables: typed substitution, defaults, $${, unset variables and misplaced ones at file:line:column; vars files; merge patch.
import { describe, expect, it } from 'vitest';
import type { DeploymentResource } from '../model.js';
import { diffPatch, mergePatch } from './overlay.js';
import { parseManifestBytes, type ParseOptions } from './parse.js';
import { parseVariablesFile, type Variables } from './variables.js';

const vars = (values: Record<string, string | number>, files = ['vars/dev.yaml']): Variables => ({
  values: new Map(Object.entries(values)),
  files,
});

function parse(text: string, variables?: Variables, allowLiteralSecrets = false) {
  const options: ParseOptions = { allowLiteralSecrets, ...(variables ? { variables } : {}) };
  return parseManifestBytes('apps/agent.yaml', new TextEncoder().encode(text), options);
}

const deployment = (lines: string[]): string =>
  [
    'apiVersion: converge/v1',
    'kind: Deployment',
    'metadata:',
    '  name: support-${ENV}',
    'spec:',
    '  source: external_docker',
    ...lines,
    '',
  ].join('\n');

const image = ['  source_revision_config:', '    image_uri: docker.io/acme/app:${TAG:-1}'];

describe('variables', () => {
  it('substitutes in names and strings, and a value that is exactly one variable takes its type', () => {
    const text = deployment([
      '  source_config:',
      '    build_command: make-${TIER}',
      '    resource_spec:',
      '      max_scale: ${MAX_SCALE}',
      '      min_scale: ${MIN:-1}',
      ...image,
    ]);
    const result = parse(text, vars({ ENV: 'dev', TIER: 'dev', MAX_SCALE: 4 }));
    expect(result.diagnostics.filter((d) => d.severity === 'error')).toEqual([]);
    const resource = result.resources[0] as DeploymentResource;
    expect(resource.name).toBe('support-dev');
    expect(resource.spec.source_config).toEqual({
      build_command: 'make-dev',
      resource_spec: { max_scale: 4, min_scale: 1 },
    });
    expect(resource.spec.source_revision_config).toEqual({ image_uri: 'docker.io/acme/app:1' });
  });

  it('keeps a quoted value a string, and $${ writes a literal ${', () => {
    const text = deployment([
      '  source_config:',
      '    build_command: "${N}"',
      '    install_command: $${HOME}/x-${N}',
      ...image,
    ]);
    const result = parse(text, vars({ ENV: 'dev', N: 3 }));
    expect(result.diagnostics.filter((d) => d.severity === 'error')).toEqual([]);
    const config = (result.resources[0] as DeploymentResource).spec.source_config;
    expect(config).toMatchObject({ build_command: '3', install_command: '${HOME}/x-3' });
  });

  it('an unset variable without a default is an error at the ${, naming the variable and the files read', () => {
    const text = deployment([
      '  source_config:',
      '    resource_spec: { max_scale: 2 }',
      '  source_revision_config:',
      '    image_uri: "docker.io/acme/app:${TAG}-${BUILD}"',
    ]);
    const result = parse(text, vars({ ENV: 'dev', TAG: '1' }, ['vars/common.yaml', 'vars/dev.yaml']));
    const errors = result.diagnostics.filter((d) => d.severity === 'error');
    expect(errors).toHaveLength(1);
    expect(errors[0]).toMatchObject({ file: 'apps/agent.yaml', line: 10, column: 43, code: 'E_VARIABLE_UNSET' });
    expect(errors[0]!.message).toContain('variable BUILD is not set');
    expect(errors[0]!.message).toContain('vars/common.yaml, vars/dev.yaml');
    expect(result.blocked.map((b) => b.name)).toEqual(['support-dev']);
    expect(result.resources).toEqual([]);
  });

  it('without variables files, says none was given', () => {
    const result = parse(deployment(['  source_config:', '    resource_spec: { max_scale: 2 }', ...image]));
    const error = result.diagnostics.find((d) => d.code === 'E_VARIABLE_UNSET')!;
    expect(error).toMatchObject({ line: 4, column: 17 });
    expect(error.message).toContain('no variables file given');
  });

  it('refuses variables in kind and apiVersion, and in a literal secret value even when literals are allowed', () => {
    const text = [
      'apiVersion: ${API}',
      'kind: Deployment',
      'metadata: { name: a }',
      'spec:',
      '  source: external_docker',
      '  source_revision_config: { image_uri: "x:1" }',
      '  secrets:',
      '    - { name: KEY, value: "${KEY}" }',
      '    - name: OTHER',
      '      valueFrom: { env: "${OTHER_ENV}" }',
      '',
    ].join('\n');
    const result = parse(text, vars({ API: 'converge/v1', KEY: 'k', OTHER_ENV: 'OTHER_FROM_ENV' }), true);
    const place = result.diagnostics.filter((d) => d.code === 'E_VARIABLE_PLACE');
    expect(place.map((d) => [d.line, d.column])).toEqual([
      [1, 13],
      [8, 28],
    ]);
    expect(place[1]!.message).toContain('never carry secret values');
  });

  it('a document that grows past the manifest cap once substituted is blocked at the reference that crosses it; the next document is planned', () => {
    const big = 'x'.repeat(1_000_000);
    const provider = (name: string, scopes: string) =>
      [
        '---',
        'apiVersion: converge/v1',
        'kind: OAuthProvider',
        `metadata: { name: ${name} }`,
        'spec:',
        '  name: P',
        '  client_id: id',
        '  client_secret: { valueFrom: { env: S } }',
        '  auth_url: https://a.example/auth',
        '  token_url: https://a.example/token',
        scopes,
      ].join('\n');
    const uses = Array.from({ length: 1000 }, () => '${BIG}').join(' ');
    const text = [
      provider('amplified', `  authorization_params: { scope: "${uses}" }`),
      provider('small', '  authorization_params: { scope: "${SMALL}" }'),
      '',
    ].join('\n');
    const result = parse(text, vars({ BIG: big, SMALL: 'read' }));
    const errors = result.diagnostics.filter((d) => d.severity === 'error');
    // The first use (column 35) fits under 1 MiB (1,000,000 characters and the document's own text); the second crosses it.
    expect(errors).toEqual([
      expect.objectContaining({ file: 'apps/agent.yaml', line: 11, column: 42, code: 'E_VARIABLE_EXPANSION' }),
    ]);
    expect(errors[0]!.message).toBe(
      'variable BIG makes this document larger than 1 MiB once substituted (the manifest size cap); the resource is blocked: use a smaller value, or reference it fewer times',
    );
    expect(result.blocked.map((b) => b.name)).toEqual(['amplified']);
    expect(result.resources.map((r) => r.name)).toEqual(['small']);
  });

  it('counts what an alias repeats: an anchored value grown by a variable, aliased past the cap, is blocked at the alias', () => {
    const text = deployment([
      '  source_config:',
      '    build_command: &cmd "${BIG}"',
      '    install_command: *cmd',
      ...image,
    ]);
    const result = parse(text, vars({ ENV: 'dev', BIG: 'y'.repeat(600_000) }));
    const errors = result.diagnostics.filter((d) => d.severity === 'error');
    expect(errors).toEqual([expect.objectContaining({ line: 9, column: 22, code: 'E_VARIABLE_EXPANSION' })]);
    expect(errors[0]!.message).toContain(
      'alias *cmd repeats variable values and makes this document larger than 1 MiB',
    );
    expect(result.blocked.map((b) => b.name)).toEqual(['support-dev']);
  });

  it('a bad ${ is a syntax error at its place', () => {
    const result = parse(
      deployment(['  source_config:', '    resource_spec:', '      max_scale: ${1X}', ...image]),
      vars({ ENV: 'd' }),
    );
    expect(result.diagnostics.find((d) => d.code === 'E_VARIABLE_SYNTAX')).toMatchObject({ line: 9, column: 18 });
  });
});

describe('variables files', () => {
  it('reads strings and numbers, and refuses other values and bad names at their place', () => {
    const read = parseVariablesFile('dev.yaml', 'ENV: dev\nMAX_SCALE: 4\nON: true\n1BAD: x\nLIST: [1]\n');
    expect([...read.values]).toEqual([
      ['ENV', 'dev'],
      ['MAX_SCALE', 4],
    ]);
    expect(read.diagnostics.map((d) => [d.line, d.column, d.code])).toEqual([
      [3, 5, 'E_VARS_FILE'],
      [4, 1, 'E_VARS_FILE'],
      [5, 7, 'E_VARS_FILE'],
    ]);
  });

  it('refuses a file that is not a mapping', () => {
    expect(parseVariablesFile('v.yaml', '- a\n').diagnostics[0]).toMatchObject({
      file: 'v.yaml',
      line: 1,
      column: 1,
      code: 'E_VARS_FILE',
    });
  });
});

describe('mergePatch (RFC 7386)', () => {
  it('merges mappings, replaces lists and scalars, removes with null', () => {
    const base = { a: { b: 1, c: [1, 2], d: 'x' }, e: 1 };
    expect(mergePatch(base, { a: { c: [3], d: null, f: true } })).toEqual({ a: { b: 1, c: [3], f: true }, e: 1 });
    expect(mergePatch(base, [1])).toEqual([1]);
    expect(base).toEqual({ a: { b: 1, c: [1, 2], d: 'x' }, e: 1 });
  });
});

describe('diffPatch', () => {
  it('is the inverse of mergePatch: changed keys, new keys, null for removed ones, nothing when equal', () => {
    const base = { spec: { a: 1, b: [1, 2], c: { d: 'x', e: 'y' } } };
    const target = { spec: { a: 2, b: [1, 2], c: { d: 'x' }, f: true } };
    const patch = diffPatch(base, target);
    expect(patch).toEqual({ spec: { a: 2, c: { e: null }, f: true } });
    expect(mergePatch(base, patch)).toEqual(target);
    expect(diffPatch(base, structuredClone(base))).toBeUndefined();
  });
});
