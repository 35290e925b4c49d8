// The content id of a set of manifest files, kept between reads: the bytes ContentHasher is fed, an edited file spliced in.
import { ContentHasher, fileHeader } from '../core/manifest-version.js';
import { byPath } from './manifest-listing.js';

/** Edited files spliced into the bytes kept; past this many, they are built again whole. */
const SPLICE_MAX = 256;

/** The bytes fed for every file in path order, and where each file's part starts (the last: the end). */
interface Built {
  stream: Buffer;
  paths: string[];
  index: Map<string, number>;
  starts: number[];
}

/**
 * What ContentHasher is fed for the files held (each one's fileHeader and bytes, in path order), kept as one buffer: a
 * file whose bytes change has its part spliced in, the paths stay sorted until one comes or goes, and the id is hashed
 * in one update. The id is the same as ContentHasher.add gives file by file.
 */
export class ContentStream {
  private readonly files = new Map<string, { header: Buffer; bytes: Uint8Array }>();
  private built: Built | undefined;
  /** Files held in `built` whose bytes were set since. */
  private readonly edited = new Set<string>();
  private kept: string | undefined;

  set(path: string, bytes: Uint8Array): void {
    const known = this.files.has(path);
    this.files.set(path, { header: fileHeader(path, bytes.length), bytes });
    this.kept = undefined;
    if (!known) this.built = undefined;
    else if (this.built) this.edited.add(path);
  }

  delete(path: string): void {
    if (!this.files.delete(path)) return;
    this.built = undefined;
    this.kept = undefined;
  }

  /** The content id of the files held (ContentHasher over their sorted paths and bytes). */
  id(): string {
    if (this.kept !== undefined) return this.kept;
    const built = this.built && this.edited.size <= SPLICE_MAX ? this.spliced(this.built) : this.build();
    this.built = built;
    this.edited.clear();
    const content = new ContentHasher();
    content.addStream(built.stream, built.paths.length);
    this.kept = content.id();
    return this.kept;
  }

  private build(): Built {
    const paths = [...this.files.keys()].sort(byPath);
    const parts: Uint8Array[] = [];
    const starts = [0];
    for (const path of paths) {
      const { header, bytes } = this.files.get(path)!;
      parts.push(header, bytes);
      starts.push(starts.at(-1)! + header.length + bytes.length);
    }
    return { stream: Buffer.concat(parts), paths, index: new Map(paths.map((path, i) => [path, i])), starts };
  }

  /**
   * `built` with the edited files' parts in place of theirs: written over them when each is as long as the one it
   * replaces, else into a new buffer, the parts between them copied whole.
   */
  private spliced(built: Built): Built {
    if (this.edited.size === 0) return built;
    const edits = [...this.edited].map((path) => built.index.get(path)!).sort((a, b) => a - b);
    const { stream, starts } = built;
    const partOf = (i: number): { header: Buffer; bytes: Uint8Array } => this.files.get(built.paths[i]!)!;
    const sameLength = (i: number): boolean =>
      partOf(i).header.length + partOf(i).bytes.length === starts[i + 1]! - starts[i]!;
    // Parts of the same length (an edit of a value's digits) are written over theirs: nothing moves.
    if (edits.every(sameLength)) {
      for (const i of edits) {
        const { header, bytes } = partOf(i);
        stream.set(header, starts[i]);
        stream.set(bytes, starts[i]! + header.length);
      }
      return built;
    }
    const parts: Uint8Array[] = [];
    const growth = new Map<number, number>();
    let from = 0;
    for (const i of edits) {
      const { header, bytes } = partOf(i);
      parts.push(stream.subarray(from, starts[i]), header, bytes);
      growth.set(i, header.length + bytes.length - (starts[i + 1]! - starts[i]!));
      from = starts[i + 1]!;
    }
    parts.push(stream.subarray(from));
    let shift = 0;
    const moved = starts.map((start, i) => {
      const at = start + shift;
      shift += growth.get(i) ?? 0;
      return at;
    });
    return { ...built, stream: Buffer.concat(parts), starts: moved };
  }
}
