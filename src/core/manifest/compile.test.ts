// compileManifests: the one pass from bytes (manifests, variables files, overlays) to resources and located diagnostics.
import { describe, expect, it } from 'vitest';
import { compileManifests } from './compile.js';

const bytes = (lines: string[]): Uint8Array => new TextEncoder().encode(lines.join('\n') + '\n');

const BASE = bytes([
  'apiVersion: converge/v1',
  'kind: Deployment',
  'metadata:',
  '  name: support-${ENV}',
  'spec:',
  '  source: codehost',
  '  repository: acme/support',
  '  source_config:',
  '    deployment_type: dev',
  '    resource_spec: { min_scale: 1, max_scale: 2 }',
]);

describe('compileManifests: bytes to resources in one pass', () => {
  it('substitutes variables, merges an overlay patch and locates a value at the overlay that set it', () => {
    const result = compileManifests([{ file: 'support.yaml', bytes: BASE }], {
      allowLiteralSecrets: false,
      vars: [{ file: 'vars/prod.yaml', bytes: bytes(['ENV: prod']) }],
      overlays: [
        {
          overlay: 0,
          file: 'prod/support.yaml',
          bytes: bytes([
            'kind: Deployment',
            'metadata: { name: support-prod }',
            'spec:',
            '  source_config:',
            '    resource_spec: { max_scale: many }',
          ]),
        },
      ],
    });
    expect(result.resources).toEqual([]);
    expect(result.blocked.map((b) => `${b.kind}/${b.name}`)).toEqual(['Deployment/support-prod']);
    const error = result.diagnostics.find((d) => d.severity === 'error');
    expect(error && `${error.file}:${error.line}:${error.column} ${error.code}`).toBe(
      'prod/support.yaml:5:33 E_SCHEMA',
    );
  });

  it('an unread variables file leaves its variables unset, an unread overlay blocks what it may change, a duplicate blocks both', () => {
    const result = compileManifests(
      [
        { file: 'a.yaml', bytes: BASE },
        { file: 'b.yaml', bytes: BASE },
      ],
      { allowLiteralSecrets: false, vars: [{ file: 'vars/dev.yaml', unread: true }], overlays: [] },
    );
    expect(result.resources).toEqual([]);
    expect(
      result.diagnostics.filter((d) => d.severity === 'error').map((d) => `${d.file}:${d.line}:${d.column} ${d.code}`),
    ).toEqual([
      'a.yaml:4:9 E_DUPLICATE',
      'a.yaml:4:17 E_VARIABLE_UNSET',
      'b.yaml:4:9 E_DUPLICATE',
      'b.yaml:4:17 E_VARIABLE_UNSET',
    ]);
    expect(result.diagnostics.find((d) => d.code === 'E_VARIABLE_UNSET')!.message).toContain('not read: vars/dev.yaml');

    const unread = {
      severity: 'error' as const,
      file: 'prod/x.yaml',
      line: 1,
      column: 1,
      code: 'E_FILE_READ',
      message: 'file cannot be read (EACCES); check its permissions',
    };
    const blocked = compileManifests([{ file: 'a.yaml', bytes: BASE }], {
      allowLiteralSecrets: false,
      vars: [{ file: 'v.yaml', bytes: bytes(['ENV: dev']) }],
      overlays: [{ overlay: 0, unread }],
    });
    expect(blocked.resources).toEqual([]);
    expect(blocked.blocked.map((b) => b.name)).toEqual(['support-dev']);
    expect(blocked.blocked[0]!.reason).toMatch(/^the overlay prod\/x.yaml:1:1 could not be read/);
  });

  it('no file read is a warning that the directory holds no manifest', () => {
    const result = compileManifests([], { allowLiteralSecrets: false });
    expect(result.diagnostics.map((d) => d.code)).toEqual(['W_NO_MANIFESTS']);
  });

  it('a file that declares nothing (empty, comments, ---) is a warning at its file:1:1; one with a resource, or an error, is not', () => {
    const result = compileManifests(
      [
        { file: 'a.yaml', bytes: BASE },
        { file: 'empty.yaml', bytes: bytes(['']) },
        { file: 'comments.yaml', bytes: bytes(['# being rewritten', '---', '# nothing yet']) },
        { file: 'broken.yaml', bytes: bytes(['metadata: {{{']) },
      ],
      { allowLiteralSecrets: false, vars: [{ file: 'v.yaml', bytes: bytes(['ENV: dev']) }] },
    );
    const empty = result.diagnostics.filter((d) => d.code === 'W_EMPTY_FILE');
    expect(empty.map((d) => `${d.file}:${d.line}:${d.column} ${d.severity}`)).toEqual([
      'comments.yaml:1:1 warning',
      'empty.yaml:1:1 warning',
    ]);
    expect(empty[0]!.message).toBe(
      'declares nothing; delete the file to remove its resources (converge never deletes what a file that is present but empty declared before)',
    );
  });
});
