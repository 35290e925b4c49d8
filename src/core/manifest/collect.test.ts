// collectManifests: order, duplicate names within and across files, and blocked resources colliding with valid ones.
import { describe, expect, it } from 'vitest';
import { collectManifests, type FileResult } from './collect.js';
import { parseManifestBytes } from './parse.js';

function file(path: string, text: string): FileResult {
  return { file: path, ...parseManifestBytes(path, new TextEncoder().encode(text), { allowLiteralSecrets: false }) };
}

function deployment(name: string, extra = ''): string {
  return `apiVersion: converge/v1\nkind: Deployment\nmetadata:\n  name: ${name}\nspec:\n  source: internal_template\n${extra}`;
}

describe('collectManifests', () => {
  it('orders resources by file path, then position, whatever order files arrive in', () => {
    const result = collectManifests([
      file('b/z.yaml', deployment('zeta')),
      file('a.yaml', `${deployment('beta')}---\n${deployment('alpha')}`),
    ]);
    expect(result.resources.map((r) => `${r.location.file}:${r.location.line}:${r.name}`)).toEqual([
      'a.yaml:4:beta',
      'a.yaml:11:alpha',
      'b/z.yaml:4:zeta',
    ]);
    expect(result.diagnostics).toEqual([]);
  });

  it('reports a name declared in two files on both, and blocks it once', () => {
    const result = collectManifests([
      file('one.yaml', deployment('shared')),
      file('two.yaml', `# second\n${deployment('shared')}`),
    ]);
    expect(result.resources).toEqual([]);
    expect(result.diagnostics.map((d) => `${d.file}:${d.line}:${d.column} ${d.code} ${d.message}`)).toEqual([
      'one.yaml:4:9 E_DUPLICATE Deployment "shared" is declared 2 times (also at two.yaml:5:9); names must be unique across the manifest directory: keep one',
      'two.yaml:5:9 E_DUPLICATE Deployment "shared" is declared 2 times (also at one.yaml:4:9); names must be unique across the manifest directory: keep one',
    ]);
    expect(result.blocked).toEqual([
      {
        kind: 'Deployment',
        name: 'shared',
        location: { file: 'one.yaml', line: 4, column: 9 },
        reason: 'Deployment "shared" is declared 2 times (one.yaml:4:9, two.yaml:5:9); keep one declaration',
      },
    ]);
  });

  it('treats the same name under two kinds as two resources', () => {
    const provider =
      'apiVersion: converge/v1\nkind: OAuthProvider\nmetadata: { name: shared }\nspec: { name: S, mcp_server_url: "https://mcp.example.com/mcp" }\n';
    const result = collectManifests([file('a.yaml', deployment('shared')), file('b.yaml', provider)]);
    expect(result.resources.map((r) => `${r.kind}/${r.name}`)).toEqual(['Deployment/shared', 'OAuthProvider/shared']);
    expect(result.blocked).toEqual([]);
  });

  it('blocks a valid declaration that collides with an invalid one, and nothing else', () => {
    const result = collectManifests([
      file('good.yaml', `${deployment('agent')}---\n${deployment('other')}`),
      file('bad.yaml', deployment('agent', '  replicas: 2\n')),
    ]);
    expect(result.resources.map((r) => r.name)).toEqual(['other']);
    expect(result.blocked.map((b) => `${b.name} @ ${b.location.file}`)).toEqual(['agent @ bad.yaml']);
    expect(result.diagnostics.map((d) => `${d.file}:${d.line} ${d.code}`)).toEqual([
      'bad.yaml:4 E_DUPLICATE',
      'bad.yaml:7 E_UNKNOWN_FIELD',
      'good.yaml:4 E_DUPLICATE',
    ]);
  });
});
