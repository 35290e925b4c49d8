// The applied record a write to the service leaves (pure): its hashes merged over the previous record, and its stamp.
import type { AppliedRecord } from '../core/model.js';
import type { WrittenState } from '../core/kinds/index.js';
import type { ManifestVersion } from '../core/manifest-version.js';
import { StoredAppliedRecord } from './schema.js';

/** What a job's write stamps on the applied record: its desired state's fingerprint, manifests' version, and job. */
export interface WriteStamp {
  desired?: string;
  manifestVersion?: ManifestVersion;
  jobId?: string;
}

/**
 * An applied record before its time is stamped: Redis' TIME, in the script that stores it
 * (src/store/applied-state-scripts.ts).
 */
export type UnstampedRecord = Omit<AppliedRecord, 'appliedAt'>;

const UnstampedStoredRecord = StoredAppliedRecord.omit({ appliedAt: true });

/**
 * The applied record of a write over `previous`, but for its time: its secret hashes merged over the previous ones
 * (secrets not written keep their hash), or replacing them when the write carried the complete set; its field hashes
 * merged by path; the definition hash replaced when given; the stamp's fingerprint, manifest version and job replacing
 * the recorded ones (a write with no job keeps none), and so does the write's answer. Its JSON starts with `secrets`,
 * as the scripts that stamp it need.
 */
export function recordOf(
  written: WrittenState,
  previous: AppliedRecord | undefined,
  stamp: WriteStamp | undefined,
): UnstampedRecord {
  const record: UnstampedRecord = {
    secrets: written.replaceSecrets ? { ...written.secrets } : { ...(previous?.secrets ?? {}), ...written.secrets },
  };
  // sources follow the hashes: replaced with a complete set (none known: none kept), else merged by name
  const sources = written.replaceSecrets
    ? { ...(written.secretSources ?? {}) }
    : { ...(previous?.secretSources ?? {}), ...(written.secretSources ?? {}) };
  if (Object.keys(sources).length > 0) record.secretSources = sources;
  const definitionHash = written.definitionHash ?? previous?.definitionHash;
  if (definitionHash !== undefined) record.definitionHash = definitionHash;
  const fields = { ...(previous?.fields ?? {}), ...(written.fields ?? {}) };
  if (Object.keys(fields).length > 0) record.fields = fields;
  const ownership = written.ownership ?? previous?.ownership;
  if (ownership) record.ownership = ownership;
  if (stamp?.desired) record.desired = stamp.desired;
  if (stamp?.manifestVersion) record.manifestVersion = stamp.manifestVersion;
  if (stamp?.jobId) record.jobId = stamp.jobId;
  if (written.answer) record.answer = { ...written.answer };
  return UnstampedStoredRecord.parse(record);
}
