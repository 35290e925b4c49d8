// Reads one listed manifest or overlay file through the capped reader, and words the paths converge cannot read (a dangling or looping link, a directory, a FIFO, a file that cannot be opened) as warnings with their entries for prune.
import type { Diagnostic, Severity } from '../core/diagnostics.js';
import type { UnseenFile } from '../core/declared-files.js';
import { MAX_MANIFEST_BYTES, TOO_LARGE_MESSAGE } from '../core/manifest/file-bytes.js';
import { readCapped } from './read-capped.js';

/** One manifest file listed under the directory read. */
export interface ManifestFile {
  /** Path relative to the manifest directory, forward slashes. */
  path: string;
  absolute: string;
  /** Listed as a symbolic link (into the tree); a file listed as none is read without following one. */
  link?: boolean;
}

function note(file: string, code: string, message: string, severity: Severity): Diagnostic {
  return { severity, file, line: 1, column: 1, code, message };
}

/** A warning and the entry prune reads: what the path declared before is unknown, never absent (src/core/declared-files.ts). */
export interface UnseenPath {
  diagnostic: Diagnostic;
  unread: UnseenFile;
}

/** What the warning of a manifest path that could not be read says after what it is (one clause, the same for every kind). */
const UNSEEN_CONSEQUENCE = 'nothing is read from it, and what it declared before is unknown, never deleted';

/** A manifest path converge could not read, as its warning (`what`: "is a directory", ...) and its entry for prune. */
function unseen(
  file: string,
  code: string,
  what: string,
  fix: string,
  message = `${what}: ${UNSEEN_CONSEQUENCE}; ${fix}`,
): UnseenPath {
  return { diagnostic: note(file, code, message, 'warning'), unread: { file, what, fix } };
}

/** The warning and entry of a manifest name whose symbolic link leads nowhere (`code`: the errno of stat). */
export function unseenLink(file: string, code: string): UnseenPath {
  const fix = 'restore its target, or delete the link to remove its resources';
  if (code === 'ELOOP')
    return unseen(
      file,
      'E_SYMLINK_LOOP',
      'is a symbolic link that loops',
      fix,
      `symbolic link loop (the link resolves to itself): ${UNSEEN_CONSEQUENCE}; ${fix}`,
    );
  const what =
    code === 'ENOENT' || code === 'ENOTDIR'
      ? 'is a symbolic link whose target does not exist'
      : 'is a symbolic link whose target cannot be read';
  return unseen(file, 'E_BROKEN_LINK', what, fix, `${what} (${code}): ${UNSEEN_CONSEQUENCE}; ${fix}`);
}

/** The warning and entry of a directory with a manifest's name: its files are read as a folder's, and it declares nothing itself. */
export function unseenFolder(file: string): UnseenPath {
  const fix = 'give the folder another name (its files are still read), or put the manifest file back';
  return unseen(
    file,
    'W_NOT_A_FILE',
    'is a directory',
    fix,
    `is a directory, not a manifest file (the manifests in it are read as a folder's): what a manifest file of this name declared before is unknown, never deleted; ${fix}`,
  );
}

/** The warning and entry of a listed manifest file whose read was refused: no regular file (a FIFO, a device), or not opened (EACCES, EIO). */
function unseenRead(
  file: string,
  refused: { refused: 'not-regular'; what: string } | { refused: 'missing' | 'unreadable'; code: string },
): UnseenPath {
  if (refused.refused === 'not-regular') {
    const fix = 'put the manifest file back, or delete this one to remove its resources';
    return unseen(
      file,
      'W_NOT_A_FILE',
      `is ${refused.what}`,
      fix,
      `is ${refused.what}, not a regular file: ${UNSEEN_CONSEQUENCE}; ${fix}`,
    );
  }
  return unseen(
    file,
    'W_FILE_UNREADABLE',
    `cannot be read (${refused.code})`,
    'make it readable (check its permissions), or delete it to remove its resources',
  );
}

type ReadOutcome =
  { bytes: Uint8Array } | { diagnostic: Diagnostic } | { vanished: Diagnostic } | { unseen: UnseenPath };

/**
 * Reads one listed manifest file: a path that is no regular file (a FIFO, a device) or cannot be opened (EACCES, EIO)
 * is unread, a warning, and what it declared before is unknown (src/core/declared-files.ts); other refusals as
 * readInputFile.
 */
export function readManifestFile(file: ManifestFile): ReadOutcome {
  const outcome = readInputFile(file);
  if (!('refused' in outcome)) return outcome;
  return { unseen: unseenRead(file.path, outcome.refused) };
}

/** A file read refused because it is no regular file or cannot be opened: the overlay's reader makes it an error, the manifests' a warning. */
type Unopened = {
  refused: { refused: 'not-regular'; what: string } | { refused: 'missing' | 'unreadable'; code: string };
  diagnostic: Diagnostic;
};

/** Reads one listed file through the capped reader (src/observe/read-capped.ts): each refusal is a diagnostic. */
export function readInputFile(file: ManifestFile): Exclude<ReadOutcome, { unseen: unknown }> | Unopened {
  // A file listed as a plain file and replaced by a link since (out of the tree, say) is not followed: O_NOFOLLOW.
  const read = readCapped(file.absolute, MAX_MANIFEST_BYTES, { follow: file.link === true });
  if ('bytes' in read) return read;
  switch (read.refused) {
    case 'missing':
      return {
        vanished: note(
          file.path,
          'E_FILE_VANISHED',
          'file disappeared while being read; skipped (it is read again on the next run)',
          'warning',
        ),
      };
    case 'unreadable':
      if (read.code === 'ELOOP')
        return {
          diagnostic: note(
            file.path,
            'E_FILE_READ',
            'file was replaced by a symbolic link since it was listed; not read (it is listed and read again on the next run)',
            'error',
          ),
        };
      return {
        refused: read,
        diagnostic: note(
          file.path,
          'E_FILE_READ',
          `file cannot be read (${read.code}); check its permissions`,
          'error',
        ),
      };
    case 'not-regular':
      return {
        refused: read,
        diagnostic: note(file.path, 'E_FILE_READ', 'is not a regular file; manifests are plain files', 'error'),
      };
    case 'too-large':
      return { diagnostic: note(file.path, 'E_TOO_LARGE', TOO_LARGE_MESSAGE, 'error') };
  }
}
