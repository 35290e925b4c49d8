// The yaml package's parse errors as plain diagnostics: stable codes, clear messages, the position that helps.
import { isCollection, isScalar, visit, type Document, type YAMLError } from 'yaml';

export interface YamlProblem {
  offset: number;
  code: string;
  message: string;
}

/** For an unterminated quote or flow collection, the position of its opening (the parser reports where the file ends). */
function openingOf(
  doc: Document,
  error: YAMLError,
): { offset: number; what: 'double' | 'single' | 'list' | 'map' } | undefined {
  const end = error.pos[0];
  const wantQuote = error.code === 'MISSING_CHAR' && /quote/.test(error.message);
  const wantFlow = /^Flow (sequence|map) .* end with/.test(error.message);
  if (!wantQuote && !wantFlow) return undefined;
  let found: { offset: number; what: 'double' | 'single' | 'list' | 'map' } | undefined;
  visit(doc, (_key, node) => {
    const range = (node as { range?: [number, number, number] } | null)?.range;
    if (!range || (range[1] !== end && range[2] !== end)) return undefined;
    if (wantQuote && isScalar(node) && (node.type === 'QUOTE_DOUBLE' || node.type === 'QUOTE_SINGLE')) {
      found = { offset: range[0], what: node.type === 'QUOTE_DOUBLE' ? 'double' : 'single' };
    } else if (wantFlow && isCollection(node) && node.flow) {
      found = { offset: range[0], what: /^Flow map/.test(error.message) ? 'map' : 'list' };
    } else {
      return undefined;
    }
    return visit.BREAK;
  });
  return found;
}

/** The text of the mapping key that starts at `offset`, if it is a short plain scalar. */
function keyAt(doc: Document, offset: number): string | undefined {
  let found: string | undefined;
  visit(doc, {
    Pair(_key, pair) {
      const key = pair.key;
      if (!isScalar(key) || key.range?.[0] !== offset) return undefined;
      found = String(key.value);
      return visit.BREAK;
    },
  });
  return found !== undefined && found.length <= 60 ? found : undefined;
}

/**
 * One problem per position: the yaml package may report several errors for one mistake (a mis-indented
 * line gives two), so the caller groups them and passes the codes reported at the same offset.
 */
export function yamlProblem(doc: Document, error: YAMLError, codesHere: readonly string[]): YamlProblem {
  const offset = error.pos[0];
  if (codesHere.includes('MULTILINE_IMPLICIT_KEY')) {
    return {
      offset,
      code: 'E_YAML',
      message:
        'a line below this value is indented further than its key, so YAML reads it as part of this value; start the keys of one mapping in the same column',
    };
  }
  switch (error.code) {
    case 'TAB_AS_INDENT':
      return { offset, code: 'E_TAB', message: 'tab character used for indentation; YAML indents with spaces only' };
    case 'DUPLICATE_KEY': {
      const key = keyAt(doc, offset);
      return {
        offset,
        code: 'E_DUPLICATE_KEY',
        message: `key ${key ? `"${key}" ` : ''}appears more than once in this mapping; keep one`,
      };
    }
    case 'BLOCK_AS_IMPLICIT_KEY':
      return {
        offset,
        code: 'E_YAML',
        message:
          'this value holds ": ", which YAML reads as a nested mapping; quote the value, or put the nested mapping on its own indented lines',
      };
    case 'BAD_DQ_ESCAPE':
      return {
        offset,
        code: 'E_YAML',
        message: 'invalid escape sequence in a double-quoted string; use single quotes to keep backslashes as they are',
      };
    case 'RESOURCE_EXHAUSTION':
      return { offset, code: 'E_DEPTH', message: 'document is nested too deeply to read' };
    default:
      break;
  }
  const opening = openingOf(doc, error);
  if (opening) {
    const messages = {
      double: 'double-quoted string is never closed; add the closing "',
      single: "single-quoted string is never closed; add the closing '",
      list: 'flow list "[" is never closed with "]" (or a line inside it is not indented enough)',
      map: 'flow mapping "{" is never closed with "}" (or a line inside it is not indented enough)',
    };
    return { offset: opening.offset, code: 'E_YAML', message: messages[opening.what] };
  }
  const first = error.message.split('\n')[0]!;
  return { offset, code: 'E_YAML', message: `YAML syntax error: ${first.charAt(0).toLowerCase()}${first.slice(1)}` };
}
