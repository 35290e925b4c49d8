// Which files of the tree fail to load, from the loader's diagnostics: each named once, at its first error.
import { describe, expect, it } from 'vitest';
import { failingFiles, type Diagnostic } from './diagnostics.js';

function at(
  file: string,
  line: number,
  column: number,
  severity: Diagnostic['severity'],
  code = 'E_SCHEMA',
): Diagnostic {
  return { severity, file, line, column, code, message: 'x' };
}

describe('failingFiles', () => {
  it('names each file with an error (or not read: vanished while read, a link out of the tree) once, at its first one, in file order; other warnings do not count', () => {
    const list = [
      at('b.yaml', 3, 11, 'error', 'E_YAML'),
      at('a.yaml', 7, 1, 'error'),
      at('a.yaml', 1, 1, 'error'),
      at('c.yaml', 1, 1, 'warning', 'W_DEPRECATED'),
      at('gone.yaml', 1, 1, 'warning', 'E_FILE_VANISHED'),
      at('vars/prod.yaml', 2, 5, 'error', 'E_VARS_FILE'),
      at('shared', 1, 1, 'warning', 'W_LINK_OUTSIDE'),
    ];
    expect(failingFiles(list)).toEqual([
      'a.yaml:1:1',
      'b.yaml:3:11',
      'gone.yaml:1:1',
      'shared:1:1',
      'vars/prod.yaml:2:5',
    ]);
    expect(failingFiles([at('c.yaml', 1, 1, 'warning')])).toEqual([]);
  });
});
