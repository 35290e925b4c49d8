// What a reconcile keeps of each listed deployment: the fields a plan reads, the text a listing repeats held once.
import type { ListedDeployment, LiveDeployment } from '../../model.js';

/**
 * The text values one listing has met, each held once (a repository's URL, an integration id, a branch, a secret's
 * name): ten thousand deployments of fifty repositories keep fifty URLs, not ten thousand copies. One per listing.
 */
export type SharedText = Map<string, string>;

function once(text: SharedText, value: string): string {
  const held = text.get(value);
  if (held !== undefined) return held;
  text.set(value, value);
  return value;
}

/** A config record's text values replaced by the listing's copies, in place (the record is the decoder's own copy). */
function shareValues(record: Record<string, unknown>, text: SharedText): Record<string, unknown> {
  for (const key in record) {
    const value = record[key];
    if (typeof value === 'string') record[key] = once(text, value);
  }
  return record;
}

/** The revision config without `repo_commit_sha`: the service reports it and nothing compares it (fields.ts). */
function revisionConfig(record: Record<string, unknown>, text: SharedText): Record<string, unknown> {
  const kept: Record<string, unknown> = {};
  for (const key in record) {
    if (key === 'repo_commit_sha') continue;
    const value = record[key];
    kept[key] = typeof value === 'string' ? once(text, value) : value;
  }
  return kept;
}

/**
 * A decoded deployment (every field checked by the wire schema, src/core/wire/schema.ts) reduced to what a plan, the
 * decision and the rollout follower read of it: no tenant, creation time, image version, commit or field this converge
 * does not know; the text a listing repeats shared through `text`.
 */
export function listedDeployment(live: LiveDeployment, text: SharedText): ListedDeployment {
  const listed: ListedDeployment = {
    id: live.id,
    name: live.name,
    source: once(text, live.source),
    status: once(text, live.status),
    updated_at: live.updated_at,
    source_config: shareValues(live.source_config, text),
    source_revision_config: revisionConfig(live.source_revision_config, text),
    secrets: live.secrets.map((secret) => ({ ...secret, name: once(text, secret.name) })),
    latest_revision_id: live.latest_revision_id ?? null,
    active_revision_id: live.active_revision_id ?? null,
  };
  if (live.secret_references) listed.secret_references = live.secret_references;
  if (live.is_preview === true) listed.is_preview = true;
  return listed;
}
