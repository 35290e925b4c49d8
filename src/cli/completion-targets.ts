// What shell completion offers for --target: the resources declared in the manifest directory named on the line being typed.
import { homedir } from 'node:os';
import { resolve } from 'node:path';
import { loadManifestDir } from '../observe/manifests.js';

/**
 * The words --target takes for the manifest directory `dir` (the shell script finds it on the line being typed): each
 * declared resource's name, or Kind/NAME where two kinds declare one name. Any problem reading it: no words (completion
 * never fails loudly). Literal secrets are accepted and nothing is resolved: only names are read.
 */
export async function targetWords(dir: string, cwd: string): Promise<string[]> {
  if (dir === '') return [];
  const loaded = await loadManifestDir(resolve(cwd, dir.replace(/^~(?=$|\/)/, homedir())), {
    allowLiteralSecrets: true,
  });
  const declared = [...loaded.resources, ...loaded.blocked];
  const kindsOf = new Map<string, Set<string>>();
  for (const r of declared) kindsOf.set(r.name, (kindsOf.get(r.name) ?? new Set()).add(r.kind));
  const out = new Set<string>();
  for (const r of declared) out.add((kindsOf.get(r.name)?.size ?? 0) > 1 ? `${r.kind}/${r.name}` : r.name);
  return [...out].sort();
}
