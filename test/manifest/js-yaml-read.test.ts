// The js-yaml path against the yaml package's path: same data, same resources, same diagnostics, or js-yaml declines the file.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseAllDocuments, type Document } from 'yaml';
import { readDocuments } from '../../src/core/manifest/js-yaml-read.js';
import { parseManifestBytes, parseValidFast, type ManifestResult, type ParseOptions } from '../../src/core/manifest/parse.js';
import { locatePath } from '../../src/core/manifest/locate.js';
import { manifestGenerator, MORE_SCALARS, SCALARS, yamlGenerator } from './generated-manifests.js';

const ROOT = join(import.meta.dirname, '..', '..');

function yamlFiles(dir: string, out: string[] = []): string[] {
  for (const name of readdirSync(dir).sort()) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) yamlFiles(path, out);
    else if (/\.ya?ml$/.test(name)) out.push(path);
  }
  return out;
}

function parse(file: string, text: string, options: ParseOptions): ManifestResult {
  return parseManifestBytes(file, Buffer.from(text, 'utf8'), options);
}

/** The yaml package's answer and the default (js-yaml first) answer agree, with and without literal secrets allowed. */
function expectSameAsFullPath(file: string, text: string): boolean {
  let fast = false;
  for (const allowLiteralSecrets of [false, true]) {
    const full = parse(file, text, { allowLiteralSecrets, fastYaml: false });
    expect(parse(file, text, { allowLiteralSecrets }), `${file}\n${text}`).toEqual(full);
    const quick = parseValidFast(file, text, { allowLiteralSecrets });
    if (quick) {
      fast = true;
      // Taken fast only when the full path reports no error; its warnings (W_DEFAULT_TIER) are the fast path's, in place.
      expect(full.diagnostics.filter((d) => d.severity !== 'warning'), `${file}: taken fast, but the full path reports errors`).toEqual([]);
      expect(quick.diagnostics, `${file}: the fast path's warnings`).toEqual(full.diagnostics);
    }
  }
  return fast;
}

/** The yaml package's data for every document, when it reads the text without errors. */
function yamlData(text: string): unknown[] | undefined {
  const docs = parseAllDocuments(text, { merge: true, uniqueKeys: true });
  if (!Array.isArray(docs) || docs.some((d) => d.errors.length > 0)) return undefined;
  return docs.map((d) => d.toJS({ maxAliasCount: 100 }));
}

/** Every path to a scalar in `data`. */
function scalarPaths(data: unknown, path: PropertyKey[] = [], out: PropertyKey[][] = []): PropertyKey[][] {
  if (Array.isArray(data)) data.forEach((item, i) => scalarPaths(item, [...path, i], out));
  else if (data && typeof data === 'object') for (const [key, value] of Object.entries(data)) scalarPaths(value, [...path, key], out);
  else out.push(path);
  return out;
}

/** When js-yaml takes the text: the yaml package reads it without a problem, to the same data, each scalar where js-yaml found it. */
function expectReadAlike(text: string): boolean {
  const fast = readDocuments(text);
  if (!fast) return false;
  const docs = parseAllDocuments(text, { merge: true, uniqueKeys: true }) as Document[];
  expect(docs.flatMap((doc) => [...doc.errors, ...doc.warnings].map((problem) => problem.code)), text).toEqual([]);
  expect(fast.map((doc) => doc.data), text).toEqual(docs.map((doc) => doc.toJS({ maxAliasCount: 100 })));
  fast.forEach((doc, i) => {
    for (const path of scalarPaths(doc.data)) {
      expect(doc.valueOffset(path), `${JSON.stringify(path)} in ${JSON.stringify(text)}`).toBe(locatePath(docs[i]!, path).node?.range?.[0]);
    }
  });
  return true;
}

describe('js-yaml path', () => {
  it('gives what the yaml package gives for every example and broken fixture, and takes the valid examples', () => {
    const files = [...yamlFiles(join(ROOT, 'examples')), ...yamlFiles(join(ROOT, 'test', 'fixtures'))];
    expect(files.length).toBeGreaterThan(60);
    const taken = files.filter((file) => expectSameAsFullPath(file, readFileSync(file, 'utf8')));
    // every manifest of examples/manifests is read by js-yaml
    const examples = yamlFiles(join(ROOT, 'examples', 'manifests'));
    expect(taken).toEqual(expect.arrayContaining(examples));
  });

  it('reads data exactly as the yaml package does', () => {
    const cases = [
      'a: 1\nb: -2\nc: +3\nd: 0x1F\ne: 0o17\nf: 1e3\ng: .5\nh: 1.50\ni: .inf\nj: -.Inf\nk: .nan\nl: 1_000\nm: 012\nn: 1.\no: 0o8\n',
      'a: true\nb: True\nc: TRUE\nd: yes\ne: no\nf: on\ng: ~\nh: null\ni: Null\nj: NULL\nk: nil\n',
      'a: 2024-01-01\nb: 12:30\nc: "quoted: yes"\nd: \'it\'\'s\'\ne: a#b\nf: a # comment\ng: "x" # c\nh: http://x.example/?a=1&b=2\ni: x:y\nj: -x\nk: ?x\n',
      'list:\n- a\n- 1\n-   spaced\nmap: { a: 1, b: x, c: true }\nseq: [1, two, 3.5]\nempty: {}\nnone: []\n',
      'a: { b: { c: [1, { d: "x, y" }] }, e: \'q\'\'s\', f: docker.io/x:1, g: a#b }\nh: [ ] # c\ni: [1, 2,]\nj: {"k":v}\n',
      'a:\n  b:\n    c: deep\n  d: [x]\ne:\n  - f: 1\n    g: 2\n  - h: 3\n',
      'k8s.io/name: x\nsnake_case: y\ndash-key: z\n_under: w\n"quoted key": q\n\'single\': s\n',
      '# leading comment\n---\na: 1\n---\nb: 2\n',
      'a: "esc\\n\\t\\u00e9\\x41\\"\\/"\nb: { c: "x\\"y" }\n', // escapes
      'a:\n  - - x\n    - y\n', // a sequence nested on one line
      '  a: 1\n  b: 2\n', // an indented document
      'a: # comment\n  b: 1\nc: # comment\n  d\n', // a value after a comment
      '? a\n: b\n', // an explicit key
    ];
    for (const text of cases) {
      const fast = readDocuments(text);
      expect(fast, text).toBeDefined();
      expect(fast!.map((d) => d.data), text).toEqual(yamlData(text));
    }
  });

  it('declines what the yaml package might read otherwise or report on', () => {
    const declined = [
      'a: &x 1\nb: *x\n', // anchors and aliases
      'a: !!str 1\n', // tags
      'a: |\n  text\n', // block scalars
      'a: >\n  text\n',
      'a: "multi\n  line"\n', // multi-line quoted
      'a: plain\n  continued\n', // multi-line plain
      'a: [1,\n  2]\n', // a flow collection over two lines
      'a: "x"#c\n', // a comment with no space before it (the yaml package refuses it, js-yaml takes it)
      'a: 0b101\n', // numbers js-yaml's core schema takes and the yaml package reads as strings
      'a: +0x1F\n',
      'a: -0x1F\n',
      'a: -0\n', // -0 against 0
      'a: +.5\n',
      'a:\tb\n', // tabs
      'a: 1\r\nb: 2\r\n', // CR
      '\uFEFFa: 1\n', // BOM
      'a: 1\na: 2\n', // duplicate key
      'a: { b: 1, b: 2 }\n', // duplicate key in flow
      '%YAML 1.1\n---\na: yes\n', // directive (and YAML 1.1 booleans)
      'a: 1\n...\n', // document end
      '--- a\n', // content on the marker line
      'a: 1\n---\n---\nb: 2\n', // empty document
      'a: 1\n---\n', // empty last document
      '# only a comment\n',
      '',
      'a:\n', // a key with no value (null)
      'a: {b, c: d}\n', // a flow key with no value
      'null: 1\n', // keys that are not the string written
      '~: 1\n',
      '1: x\n',
      'true: x\n',
      '{ a: 1 }: x\n',
      '[a]: x\n',
      '__proto__: 1\n',
      '<<: { a: 1 }\n', // merge key
      `${'k'.repeat(1001)}: 1\n`, // a key the yaml package finds too long
      `${Array.from({ length: 41 }, (_, i) => `${' '.repeat(i)}k:`).join('\n')} 1\n`, // nesting deeper than 40
      'scalar\n', // documents that are not mappings
      '- a\n- b\n',
      'a: b: c\n', // errors of both
      'a: { b: c: d }\n',
      'a: { b: 1 } trailing\n',
      'a:\n    b: 1\n  c: 2\n',
    ];
    for (const text of declined) expect(readDocuments(text), JSON.stringify(text)).toBeUndefined();
  });

  it('places each value where the yaml package places it (resource locations)', () => {
    const text = [
      'apiVersion: converge/v1',
      'kind: Deployment',
      'metadata:',
      "  name: 'quoted-name'",
      'spec:',
      '  source: codehost',
      '  repository: acme/agent',
      '  secrets:',
      '  - name: A',
      '    valueFrom: { env: A_ENV }',
      '  -   name: B',
      '      valueFrom:',
      '        file: ./b.txt',
      '  source_revision_config: { repo_ref: "main", graph_config_path: langgraph.json }',
      '  source_config: { deployment_type: dev }',
      '',
    ].join('\n');
    const full = parse('f.yaml', text, { allowLiteralSecrets: false, fastYaml: false });
    const fast = parseValidFast('f.yaml', text, { allowLiteralSecrets: false });
    expect(fast).toBeDefined();
    expect(fast).toEqual(full);
    const resource = fast!.resources[0]!;
    expect(resource.location).toMatchObject({ line: 4, column: 9 });
    expect(resource.kind === 'Deployment' && resource.repositoryLocation).toEqual({ file: 'f.yaml', line: 7, column: 15 });
    expect(resource.kind === 'Deployment' && resource.secretLocations).toEqual({
      A: { file: 'f.yaml', line: 10, column: 23 },
      B: { file: 'f.yaml', line: 13, column: 15 },
    });
  });

  /** Generated manifests and a mutation of each: both paths agree on all; returns how many js-yaml took. */
  function agreeOnGenerated(seed: number, scalars: readonly string[], count: number): number {
    const { manifest, mutate } = manifestGenerator(seed, scalars);
    let taken = 0;
    for (let n = 0; n < count; n++) {
      const text = manifest();
      if (expectSameAsFullPath(`gen-${n}.yaml`, text)) taken++;
      expectSameAsFullPath(`mut-${n}.yaml`, mutate(text));
    }
    return taken;
  }

  it('takes a codehost manifest without deployment_type, with its W_DEFAULT_TIER warning where the full path puts it', () => {
    const head = 'apiVersion: converge/v1\nkind: Deployment\nmetadata:\n  name: tier\nspec:\n  source: codehost\n';
    const rest = '  source_revision_config:\n    graph_config_path: langgraph.json\n';
    const block = `${head}  # the tier is left to the service\n  source_config:\n    integration_id: 11111111-1111-4111-8111-111111111111\n    repo_url: https://github.com/acme/tier\n${rest}`;
    const flow = `${head}  source_config: {integration_id: 11111111-1111-4111-8111-111111111111, repo_url: "https://github.com/acme/tier"}\n${rest}`;
    const two = `${block}---\n${flow.replace('name: tier', 'name: tier-2')}`;
    for (const [text, at] of [[block, ['8:3']], [flow, ['7:3']], [two, ['8:3', '20:3']]] as const) {
      expect(expectSameAsFullPath('tier.yaml', text), text).toBe(true);
      const quick = parseValidFast('tier.yaml', text, { allowLiteralSecrets: false })!;
      expect(quick.diagnostics.map((d) => `${d.line}:${d.column} ${d.severity} ${d.code}`)).toEqual(at.map((p) => `${p} warning W_DEFAULT_TIER`));
    }
  });

  it('agrees with the full path on 3,000 generated manifests and mutations of them', () => {
    // the generator writes valid, plain manifests often enough that the js-yaml path is exercised, not skipped
    expect(agreeOnGenerated(20261121, SCALARS, 1500)).toBeGreaterThan(150);
  }, 120_000);

  it('agrees with the full path on 1,000 more, written with the forms where js-yaml and the yaml package part', () => {
    expect(agreeOnGenerated(20261123, [...SCALARS, ...MORE_SCALARS], 500)).toBeGreaterThan(50);
  }, 120_000);

  it('reads generated YAML of every shape as the yaml package does, or declines it (6,000 texts)', () => {
    const next = yamlGenerator(20261123);
    let taken = 0;
    for (let n = 0; n < 6000; n++) if (expectReadAlike(next())) taken++;
    expect(taken).toBeGreaterThan(300);
  }, 120_000);
});
