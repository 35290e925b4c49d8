// The corpus of broken manifests (test/fixtures/bad): every file's exact diagnostics, and what stays usable beside them.
import { readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import type { Diagnostic } from '../../src/core/diagnostics.js';
import { loadManifestDir, type ManifestDirResult } from '../../src/observe/manifests.js';
import { secretDiagnostics } from '../../src/secrets/resolve.js';
import { CORPUS } from './bad-corpus-table.js';

const BAD_DIR = fileURLToPath(new URL('../fixtures/bad/', import.meta.url));

function shape(d: Diagnostic): [number, number, string, string] {
  return [d.line, d.column, d.code, d.message];
}

describe('broken manifest corpus', () => {
  let result: ManifestDirResult;
  beforeAll(async () => {
    result = await loadManifestDir(BAD_DIR, { allowLiteralSecrets: false });
  });

  it('has at least 40 committed fixtures, each with an expectation in the table', () => {
    const files = readdirSync(BAD_DIR)
      .filter((f) => /\.ya?ml$/.test(f))
      .sort();
    expect(files.length).toBeGreaterThanOrEqual(40);
    expect(files).toEqual(Object.keys(CORPUS).sort());
    expect(result.files).toEqual(files);
  });

  for (const [file, expected] of Object.entries(CORPUS)) {
    it(`${file}: ${expected.diagnostics.length === 0 ? 'no diagnostic' : expected.diagnostics.map(([l, c, code]) => `${code} at ${l}:${c}`).join(', ')}`, () => {
      const got = result.diagnostics.filter((d) => d.file === file);
      expect(got.map((d) => d.severity)).toEqual(expected.diagnostics.map(() => 'error'));
      expect(got).toHaveLength(expected.diagnostics.length);
      got.forEach((diagnostic, index) => {
        const [line, column, code, text] = expected.diagnostics[index]!;
        const [gotLine, gotColumn, gotCode, gotMessage] = shape(diagnostic);
        expect({ line: gotLine, column: gotColumn, code: gotCode }).toEqual({ line, column, code });
        expect(gotMessage).toContain(text);
      });
      const blocked = result.blocked.filter(
        (b) => b.location.file === file || new RegExp(`[ (,]${file.replace(/\./g, '\\.')}:`).test(b.reason),
      );
      if (expected.blocks === null) expect(blocked).toEqual([]);
      else expect(blocked.map((b) => b.name)).toEqual([expected.blocks]);
    });
  }

  it('keeps the valid manifests beside the broken ones', () => {
    expect(result.resources.map((r) => `${r.location.file}:${r.name}`).sort()).toEqual([
      'multi-doc-one-bad.yaml:neighbour-good',
      'secret-missing-env.yaml:missing-env',
      'secret-missing-file.yaml:missing-file',
      'valid-neighbour.yaml:valid-neighbour',
    ]);
  });

  it('blocks a resource with a reason that points at the first problem', () => {
    const blocked = result.blocked.find((b) => b.name === 'negative-cpu');
    expect(blocked?.reason).toBe(
      'invalid manifest: resource-spec-negative.yaml:9:12: spec.source_config.resource_spec.cpu: must be >= 0 (got -0.5); fix the manifest (converge validate)',
    );
    const duplicate = result.blocked.find((b) => b.name === 'twice-declared');
    expect(duplicate?.reason).toBe(
      'Deployment "twice-declared" is declared 2 times (duplicate-a.yaml:4:9, duplicate-b.yaml:5:9); keep one declaration',
    );
  });

  it('never repeats a literal secret value in a diagnostic or a blocked reason', () => {
    const text = JSON.stringify(result);
    expect(text).not.toContain('sk-literal-do-not-commit');
    expect(text).not.toContain('literal-client-secret-value');
  });

  it('reports a secret whose environment variable is not set at the line that names it (secretDiagnostics)', () => {
    const missing = result.resources.filter((r) => r.location.file === 'secret-missing-env.yaml');
    const diagnostics = secretDiagnostics(missing, {});
    expect(diagnostics.map(shape)).toEqual([
      [
        10,
        25,
        'E_SECRET',
        'Deployment/missing-env: secret OPENAI_API_KEY: environment variable CONVERGE_TEST_SURELY_UNSET_VARIABLE is not set',
      ],
    ]);
    expect(secretDiagnostics(missing, { CONVERGE_TEST_SURELY_UNSET_VARIABLE: 'set' })).toEqual([]);
  });

  it('reports a secret whose file does not exist at the line that names it (secretDiagnostics)', () => {
    const missing = result.resources.filter((r) => r.location.file === 'secret-missing-file.yaml');
    expect(secretDiagnostics(missing, {}).map(shape)).toEqual([
      [
        10,
        26,
        'E_SECRET',
        'Deployment/missing-file: secret SIGNING_KEY: secret file /nonexistent/converge-test/signing-key does not exist',
      ],
    ]);
  });
});
