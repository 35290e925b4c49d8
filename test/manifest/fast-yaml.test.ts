// The fast manifest reader against the yaml package: same data, same resources, same diagnostics, or it declines.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { fastParseDocuments } from '../../src/core/manifest/fast-yaml.js';
import { parseManifestText, parseValidFast } from '../../src/core/manifest/parse.js';
import { prng } from '../helpers/prng.js';

const ROOT = join(import.meta.dirname, '..', '..');

function yamlFiles(dir: string, out: string[] = []): string[] {
  for (const name of readdirSync(dir).sort()) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) yamlFiles(path, out);
    else if (/\.ya?ml$/.test(name)) out.push(path);
  }
  return out;
}

/** The full path's answer and the default (fast first) answer agree, with and without literal secrets allowed. */
function expectSameAsFullPath(file: string, text: string): boolean {
  let fast = false;
  for (const allowLiteralSecrets of [false, true]) {
    const full = parseManifestText(file, text, { allowLiteralSecrets, fastYaml: false });
    expect(parseManifestText(file, text, { allowLiteralSecrets }), `${file}\n${text}`).toEqual(full);
    const quick = parseValidFast(file, text, { allowLiteralSecrets });
    if (quick) {
      fast = true;
      expect(full.diagnostics, `${file}: taken fast, but the full path reports problems`).toEqual([]);
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

describe('fast manifest reader', () => {
  it('gives what the yaml package gives for every example and broken fixture, and takes the valid examples', () => {
    const files = [...yamlFiles(join(ROOT, 'examples')), ...yamlFiles(join(ROOT, 'test', 'fixtures'))];
    expect(files.length).toBeGreaterThan(60);
    const taken = files.filter((file) => expectSameAsFullPath(file, readFileSync(file, 'utf8')));
    // every manifest of examples/manifests is plain enough to be read fast
    const examples = yamlFiles(join(ROOT, 'examples', 'manifests'));
    expect(taken).toEqual(expect.arrayContaining(examples));
  });

  it('reads data exactly as the yaml package does, or declines', () => {
    const cases = [
      'a: 1\nb: -2\nc: +3\nd: 0x1F\ne: 0o17\nf: 1e3\ng: .5\nh: 1.50\ni: .inf\nj: -.Inf\nk: .nan\nl: 1_000\nm: 012\n',
      'a: true\nb: True\nc: TRUE\nd: yes\ne: no\nf: on\ng: ~\nh: null\ni: Null\nj: NULL\nk: nil\n',
      'a: 2024-01-01\nb: 12:30\nc: "quoted: yes"\nd: \'it\'\'s\'\ne: a#b\nf: a # comment\ng: "x" # c\nh: http://x.example/?a=1&b=2\n',
      'list:\n- a\n- 1\n-   spaced\nmap: { a: 1, b: x, c: true }\nseq: [1, two, 3.5]\nempty: {}\nnone: []\n',
      'a: { b: { c: [1, { d: "x, y" }] }, e: \'q\'\'s\', f: docker.io/x:1, g: a#b }\nh: [ ] # c\n',
      '- a\n- b\n',
      'a:\n  b:\n    c: deep\n  d: [x]\ne:\n  - f: 1\n    g: 2\n  - h: 3\n',
      'k8s.io/name: x\nsnake_case: y\ndash-key: z\n_under: w\n',
      '# leading comment\n---\na: 1\n---\nb: 2\n',
    ];
    for (const text of cases) {
      const fast = fastParseDocuments(text);
      expect(fast, text).toBeDefined();
      expect(fast!.map((d) => d.data), text).toEqual(yamlData(text));
    }
  });

  it('declines what it does not take on', () => {
    const declined = [
      'a: &x 1\nb: *x\n', // anchors and aliases
      'a: !!str 1\n', // tags
      'a: |\n  text\n', // block scalars
      'a: >\n  text\n',
      'a: "multi\n  line"\n', // multi-line quoted
      'a: plain\n  continued\n', // multi-line plain
      'a: "esc\\n"\n', // escapes
      'a:\tb\n', // tabs
      'a: 1\r\nb: 2\r\n', // CR
      '\uFEFFa: 1\n', // BOM
      'a: 1\na: 2\n', // duplicate key
      '%YAML 1.2\n---\na: 1\n', // directive
      'a: 1\n...\n', // document end
      '--- a\n', // content on the marker line
      'a: 1\n---\n---\nb: 2\n', // empty document
      'a:\n', // null value
      'null: 1\n', // a key that is not the string written
      '__proto__: 1\n',
      '"quoted key": 1\n',
      'scalar\n',
      'a: b: c\n', // a mapping value where none is allowed
      'a: { b: "x\\"y" }\n', // escapes in flow
      'a: { b: c: d }\n', // a key where a value belongs
      'a: { b: 1 } trailing\n',
      'a: { b: 1, b: 2 }\n', // duplicate key in flow
      'a: [1, 2,]\n', // trailing comma
      'a:\n  - - x\n', // nested sequence on one line
      '<<: { a: 1 }\n', // merge key
      '  a: 1\n', // indented document
      'a:\n    b: 1\n  c: 2\n', // inconsistent indentation
      '',
    ];
    for (const text of declined) expect(fastParseDocuments(text), JSON.stringify(text)).toBeUndefined();
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
    const full = parseManifestText('f.yaml', text, { allowLiteralSecrets: false, fastYaml: false });
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

  it('agrees with the full path on 3,000 generated manifests and mutations of them', () => {
    const random = prng(20261121);
    const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)]!;
    const SCALARS = [
      'plain', 'two words', '1', '-1', '0x1F', '0o17', '1e3', '1.5', '.5', '1_000', '012', 'true', 'True', 'yes', 'no', 'on', '~', 'null',
      '2024-01-01', 'a#b', 'a # comment', '"double"', "'single'", "'it''s'", '"with: colon"', 'http://x.example/?a=1&b=2', 'ünïcödé',
      '"esc\\t"', '&anchor value', '*alias', '!!str 5', '|', '>', 'trailing   ', '"unclosed', "'", ':', '-', '- x', 'a: b', '{ a: 1 }',
      '[1, 2]', '{}', '[]', '{ env: SECRET_ENV }', '@at', '`tick`', '%pct', '? q', ',comma',
    ];
    const NAMES = ['agent-one', 'Agent_Two', 'x', '1starts-with-digit', '"quoted-name"', "'single-name'", 'name with spaces'];
    const SOURCES = ['codehost', 'external_docker', 'internal_template', 'github', 'bogus'];
    const pad = (n: number) => ' '.repeat(n);

    /** Mostly a valid value, sometimes any scalar at all. */
    const often = (valid: readonly string[]): string => (random() < 0.85 ? pick(valid) : pick(SCALARS));

    function manifest(): string {
      const ind = pick([2, 2, 2, 4, 3]);
      const compact = random() < 0.5;
      const lines: string[] = [];
      if (random() < 0.2) lines.push('# a comment');
      if (random() < 0.2) lines.push('---');
      lines.push('apiVersion: converge/v1');
      lines.push(random() < 0.95 ? 'kind: Deployment' : `kind: ${pick(['Deploymnet', 'OAuthProvider', '1', '~'])}`);
      lines.push('metadata:');
      lines.push(`${pad(ind)}name: ${often(NAMES)}`);
      if (random() < 0.4) lines.push(`${pad(ind)}annotations:`, `${pad(ind * 2)}team: ${often(['platform', '"quoted team"', "'single'"])}`);
      lines.push('spec:');
      const source = random() < 0.9 ? 'external_docker' : pick(SOURCES);
      lines.push(`${pad(ind)}source: ${source}`);
      if (source !== 'external_docker' && random() < 0.5) lines.push(`${pad(ind)}repository: ${often(['acme/agent', 'acme/agent # c', '"acme/agent"'])}`);
      if (random() < 0.7) {
        lines.push(`${pad(ind)}source_config:`);
        lines.push(`${pad(ind * 2)}resource_spec:`);
        lines.push(`${pad(ind * 3)}max_scale: ${often(['3', '1', '0x3', '3.0', '+2', '"3"', 'three'])}`);
        if (random() < 0.5) lines.push(`${pad(ind * 3)}cpu: ${often(['1', '2', '0.5', 'x'])}`);
        if (random() < 0.3) lines.push('');
        if (random() < 0.3) lines.push(`${pad(ind * 3)}# comment inside`);
      }
      if (random() < 0.8) {
        if (random() < 0.5) {
          lines.push(`${pad(ind)}source_revision_config:`);
          lines.push(`${pad(ind * 2)}image_uri: ${often(['docker.io/acme/x:1', '"docker.io/acme/x:1"', 'docker.io/acme/x:1 # pinned'])}`);
        } else {
          lines.push(`${pad(ind)}source_revision_config: { image_uri: ${often(['docker.io/acme/x:1', '"docker.io/acme/x:1"', "'docker.io/acme/x:1'"])} }`);
        }
      }
      if (random() < 0.6) {
        lines.push(`${pad(ind)}secrets:`);
        const dash = compact ? pad(ind) : pad(ind * 2);
        const count = 1 + Math.floor(random() * 3);
        for (let i = 0; i < count; i++) {
          const style = random();
          if (style < 0.4) {
            lines.push(`${dash}- name: S${i}`, `${dash}  valueFrom: { env: ${often(['SECRET_ENV', 'X', '"QUOTED_ENV"'])} }`);
          } else if (style < 0.7) {
            lines.push(`${dash}- name: S${i}`, `${dash}  valueFrom:`, `${dash}    ${pick(['env', 'file'])}: ${often(['SECRET_ENV', './s.txt'])}`);
          } else if (style < 0.85) {
            lines.push(`${dash}- name: S${i}`, `${dash}  value: ${pick(['literal', pick(SCALARS)])}`);
          } else {
            lines.push(`${dash}- ${pick(SCALARS)}`);
          }
        }
      }
      if (random() < 0.1) lines.push(`${pad(ind)}unknown_field: 1`);
      if (random() < 0.15) lines.push('---', 'apiVersion: converge/v1', 'kind: OAuthProvider', 'metadata:', `${pad(ind)}name: prov`, 'spec:', `${pad(ind)}name: ${often(['Prov'])}`, `${pad(ind)}mcp_server_url: https://mcp.example.com/mcp`);
      return lines.join('\n') + (random() < 0.9 ? '\n' : '');
    }

    function mutate(text: string): string {
      const at = Math.floor(random() * (text.length + 1));
      const op = random();
      if (op < 0.3) return text.slice(0, at) + pick([' ', ':', '-', '#', '"', "'", '\n', '  ', '{', '&', '*', '\t', 'x']) + text.slice(at);
      if (op < 0.6) return text.slice(0, at) + text.slice(at + 1 + Math.floor(random() * 3));
      const lines = text.split('\n');
      const i = Math.floor(random() * lines.length);
      if (op < 0.8) lines.splice(i, 0, lines[Math.floor(random() * lines.length)]!);
      else lines[i] = pad(Math.floor(random() * 6)) + lines[i]!.trimStart();
      return lines.join('\n');
    }

    let taken = 0;
    for (let n = 0; n < 1500; n++) {
      const text = manifest();
      if (expectSameAsFullPath(`gen-${n}.yaml`, text)) taken++;
      expectSameAsFullPath(`mut-${n}.yaml`, mutate(text));
    }
    // the generator writes valid, plain manifests often enough that the fast path is exercised, not skipped
    expect(taken).toBeGreaterThan(150);
  }, 60_000);
});
