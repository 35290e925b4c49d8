// The flap guard's decisions: A-B-A of one version is a conflict, a revert (a new version) is not; heals past flap_limit are refused.
import { describe, expect, it } from 'vitest';
import {
  decideWrite,
  EMPTY_HISTORY,
  oneLeader,
  pruneHistory,
  readOf,
  wentBack,
  recordWrite,
  releasedBy,
  type Conflict,
  type FlapHistory,
  type FlapSettings,
  type WriteAttempt,
  type WriteDecision,
} from './flap-guard.js';
import type { ManifestVersion } from './manifest-version.js';

const SETTINGS: FlapSettings = { windowMs: 60_000, limit: 3 };
const A = 'a'.repeat(64);
const B = 'b'.repeat(64);
const C = 'c'.repeat(64);
const T0 = Date.parse('2026-01-01T00:00:00Z');

function commit(id: string): ManifestVersion {
  return { kind: 'git', id: id.repeat(40).slice(0, 40), readAt: new Date(T0).toISOString() };
}

function at(seconds: number, desired: string | undefined, version?: ManifestVersion, heal = false): WriteAttempt {
  return { desired, version, heal, now: new Date(T0 + seconds * 1000) };
}

/** The conflict of a refused decision (fails the test when the write was allowed). */
function refusal(decision: WriteDecision | undefined): Conflict {
  if (!decision || decision.allow) throw new Error('expected the write to be refused');
  return decision.conflict;
}

/** Runs attempts in order, recording each allowed write; returns the decisions. */
function play(attempts: Array<WriteAttempt & { fields?: string[] }>, settings = SETTINGS) {
  let history: FlapHistory = EMPTY_HISTORY;
  return attempts.map((attempt) => {
    const decision = decideWrite(history, undefined, attempt, settings);
    if (decision.allow) history = recordWrite(history, attempt, attempt.fields ?? [], settings);
    return decision;
  });
}

describe('decideWrite', () => {
  it('finds A, then B, then A of the same versions within the window: the third write is refused, naming both versions', () => {
    const [a, b, again] = play([at(0, A, commit('1')), at(5, B, commit('2')), at(10, A, commit('1'))]);
    expect(a).toEqual({ allow: true });
    expect(b).toEqual({ allow: true });
    expect(again).toMatchObject({
      allow: false,
      declared: true,
      conflict: { reason: 'desired_alternates', desired: [A, B], versions: [commit('1'), commit('2')] },
    });
    expect(refusal(again).message).toContain('alternates between 1111111 and 2222222');
  });

  it('lets a revert through: the same desired state from a new commit is a change, not a fight', () => {
    expect(play([at(0, A, commit('1')), at(5, B, commit('2')), at(10, A, commit('3'))]).map((d) => d.allow)).toEqual([
      true,
      true,
      true,
    ]);
  });

  it('lets one leader go back to an earlier commit, as often as the operator does: tag1, tag2, revert, tag3, checkout of tag1, tag2, tag1', () => {
    const leader = (seconds: number, desired: string, version: ManifestVersion): WriteAttempt => ({
      ...at(seconds, desired, version),
      fence: 7,
    });
    const D = 'd'.repeat(64);
    const decisions = play([
      leader(0, A, commit('1')),
      leader(5, B, commit('2')),
      leader(10, A, commit('3')),
      leader(15, D, commit('4')),
      leader(20, A, commit('1')),
      leader(25, B, commit('2')),
      leader(30, A, commit('1')),
    ]);
    expect(decisions.map((d) => d.allow)).toEqual([true, true, true, true, true, true, true]);
  });

  it('still finds two replicas on different commits taking turns: each new leader holds a newer fencing token', () => {
    // Replica x (commit 1) leads with token 1, replica y (commit 2) takes over with token 2, x again with token 3.
    const turns = play([
      { ...at(0, A, commit('1')), fence: 1 },
      { ...at(5, B, commit('2')), fence: 2 },
      { ...at(10, A, commit('1')), fence: 3 },
    ]);
    expect(turns.map((d) => d.allow)).toEqual([true, true, false]);
    expect(refusal(turns[2])).toMatchObject({ reason: 'desired_alternates', desired: [A, B] });
    // A leader that goes back to the commit a former leader wrote, after its own write under another token: a fight too.
    expect(
      play([
        { ...at(0, A, commit('1')), fence: 1 },
        { ...at(5, B, commit('2')), fence: 1 },
        { ...at(10, A, commit('1')), fence: 2 },
      ]).map((d) => d.allow),
    ).toEqual([true, true, false]);
    // apply's jobs carry no token: judged as before.
    expect(
      play([at(0, A, commit('1')), at(5, B, commit('2')), { ...at(10, A, commit('1')), fence: undefined }]).map(
        (d) => d.allow,
      ),
    ).toEqual([true, true, false]);
  });

  it("lets a new leader term go back when it read the last write's version before the one it writes: a rollback after a restart, a kill -9 or a failover on one directory", () => {
    // Term 1 wrote A (commit 1) then B (commit 2); the daemon restarts (term 2), reads commit 2, then the checkout of commit 1.
    const rollback = play([
      { ...at(0, A, commit('1')), fence: 1 },
      { ...at(5, B, commit('2')), fence: 1 },
      { ...at(10, A, commit('1')), fence: 2, reads: [readOf(commit('2')), readOf(commit('1'))] },
    ]);
    expect(rollback.map((d) => d.allow)).toEqual([true, true, true]);
    // And forward and back again in that term, after an earlier term's reads and writes.
    const reads = [readOf(commit('2')), readOf(commit('1')), readOf(commit('2')), readOf(commit('1'))];
    const again = play([
      { ...at(0, A, commit('1')), fence: 1 },
      { ...at(5, B, commit('2')), fence: 1 },
      { ...at(10, A, commit('1')), fence: 2, reads: reads.slice(0, 2) },
      { ...at(15, B, commit('2')), fence: 3, reads: [readOf(commit('1')), readOf(commit('2'))] },
      { ...at(20, A, commit('1')), fence: 3, reads: [readOf(commit('1')), readOf(commit('2')), readOf(commit('1'))] },
    ]);
    expect(again.map((d) => d.allow)).toEqual([true, true, true, true, true]);
  });

  it('still refuses a new leader term that never read the version in between: a replica on the earlier commit, or reads unknown', () => {
    const writes = [
      { ...at(0, A, commit('1')), fence: 1 },
      { ...at(5, B, commit('2')), fence: 2 },
    ];
    // Replica x (commit 1) leads again with token 3 and has read only commit 1.
    expect(
      play([...writes, { ...at(10, A, commit('1')), fence: 3, reads: [readOf(commit('1'))] }]).map((d) => d.allow),
    ).toEqual([true, true, false]);
    // A term that read commit 1 and then commit 2 went forward, not back: its write of commit 1 is not a rollback.
    expect(
      play([...writes, { ...at(10, A, commit('1')), fence: 3, reads: [readOf(commit('1')), readOf(commit('2'))] }]).map(
        (d) => d.allow,
      ),
    ).toEqual([true, true, false]);
    // Reads expired or never recorded: no evidence.
    expect(play([...writes, { ...at(10, A, commit('1')), fence: 3, reads: [] }]).map((d) => d.allow)).toEqual([
      true,
      true,
      false,
    ]);
    // A last write without a version (nothing to have read): no evidence either.
    expect(
      play([
        at(0, A, commit('1')),
        at(5, B, undefined),
        { ...at(10, A, commit('1')), fence: 3, reads: [readOf(commit('2')), readOf(commit('1'))] },
      ]).map((d) => d.allow),
    ).toEqual([true, true, false]);
  });

  it("wentBack: the last write's version read before the version written now, by kind and id", () => {
    const one = commit('1');
    const two = commit('2');
    expect(wentBack({ version: one, reads: [readOf(two), readOf(one)] }, { version: two })).toBe(true);
    expect(
      wentBack({ version: { ...one, uncommitted: true }, reads: [readOf(two), readOf(one)] }, { version: two }),
    ).toBe(true);
    expect(wentBack({ version: one, reads: [readOf(one), readOf(two)] }, { version: two })).toBe(false);
    expect(wentBack({ version: one, reads: [readOf(one)] }, { version: two })).toBe(false);
    expect(wentBack({ version: one }, { version: two })).toBe(false);
    expect(wentBack({ version: one, reads: [readOf(two), readOf(one)] }, {})).toBe(false);
    expect(
      wentBack(
        { version: { kind: 'content', id: one.id, readAt: one.readAt }, reads: [readOf(two), readOf(one)] },
        { version: two },
      ),
    ).toBe(false);
    expect(readOf(one)).toBe(`git:${one.id}`);
  });

  it('oneLeader: the same fencing token on both writes, never when the attempt has none', () => {
    expect(oneLeader({ fence: 4 }, { fence: 4 })).toBe(true);
    expect(oneLeader({ fence: 3 }, { fence: 4 })).toBe(false);
    expect(oneLeader({}, { fence: 4 })).toBe(false);
    expect(oneLeader({}, { fence: undefined })).toBe(false);
  });

  it('records the fencing token with the write', () => {
    expect(recordWrite(EMPTY_HISTORY, { ...at(0, A, commit('1')), fence: 9 }, [], SETTINGS).writes[0]).toMatchObject({
      desired: A,
      fence: 9,
    });
  });

  it('lets A, B, A of one version through: the difference is not in the manifests (a secret rotated and rotated back)', () => {
    expect(play([at(0, A, commit('1')), at(5, B, commit('1')), at(10, A, commit('1'))]).map((d) => d.allow)).toEqual([
      true,
      true,
      true,
    ]);
  });

  it('forgets writes older than the window', () => {
    expect(play([at(0, A, commit('1')), at(5, B, commit('2')), at(70, A, commit('1'))]).map((d) => d.allow)).toEqual([
      true,
      true,
      true,
    ]);
  });

  it('allows flap_limit heals of one desired state, refuses the next, and names the fields put back', () => {
    const decisions = play([
      { ...at(0, A, commit('1')) },
      { ...at(1, A, commit('1'), true), fields: ['source_config.resource_spec.max_scale'] },
      { ...at(2, A, commit('1'), true), fields: ['source_config.resource_spec.max_scale'] },
      { ...at(3, A, commit('1'), true), fields: ['source_config.resource_spec.min_scale'] },
      { ...at(4, A, commit('1'), true) },
    ]);
    expect(decisions.map((d) => d.allow)).toEqual([true, true, true, true, false]);
    const refused = decisions[4]!;
    expect(refused).toMatchObject({
      declared: true,
      conflict: {
        reason: 'changed_outside',
        desired: [A],
        fields: ['source_config.resource_spec.max_scale', 'source_config.resource_spec.min_scale'],
      },
    });
    expect(refusal(refused).message).toMatch(
      /^changed outside converge: source_config\.resource_spec\.max_scale, source_config\.resource_spec\.min_scale put back 3 times within flap_window \(1m\)/,
    );
  });

  it('counts only heals of the same desired state within the window, with the limit given', () => {
    const limit1: FlapSettings = { windowMs: 10_000, limit: 1 };
    expect(
      play(
        [
          at(0, A),
          at(1, A, undefined, true),
          at(20, A, undefined, true),
          at(21, B),
          at(22, B, undefined, true),
          at(23, B, undefined, true),
        ],
        limit1,
      ).map((d) => d.allow),
    ).toEqual([true, true, true, true, true, false]);
  });

  it('refuses every write while a conflict stands, and never judges a job without a fingerprint', () => {
    const standing = refusal(play([at(0, A, commit('1')), at(1, B, commit('2')), at(2, A, commit('1'))])[2]);
    expect(decideWrite(EMPTY_HISTORY, standing, at(3, C), SETTINGS)).toEqual({
      allow: false,
      conflict: standing,
      declared: false,
    });
    expect(
      play([
        at(0, undefined),
        at(1, undefined, undefined, true),
        at(2, undefined, undefined, true),
        at(3, undefined, undefined, true),
        at(4, undefined, undefined, true),
      ]).every((d) => d.allow),
    ).toBe(true);
  });
});

describe('releasedBy and pruneHistory', () => {
  it('a conflict is released by a desired state it does not hold, not by one of its own', () => {
    const conflict = refusal(play([at(0, A, commit('1')), at(1, B, commit('2')), at(2, A, commit('1'))])[2]);
    expect(releasedBy(conflict, A)).toBe(false);
    expect(releasedBy(conflict, B)).toBe(false);
    expect(releasedBy(conflict, C)).toBe(true);
    expect(releasedBy(conflict, undefined)).toBe(false);
  });

  it('keeps at most 16 writes and nothing older than the window', () => {
    let history: FlapHistory = EMPTY_HISTORY;
    for (let i = 0; i < 40; i++)
      history = recordWrite(history, at(i, i % 2 ? A : C, undefined, i % 2 === 1), ['f'], SETTINGS);
    expect(history.writes).toHaveLength(16);
    const later = pruneHistory(history, new Date(T0 + 90_000), SETTINGS);
    expect(later.writes.map((w) => w.at)).toEqual(
      history.writes.filter((w) => Date.parse(w.at) >= T0 + 30_000).map((w) => w.at),
    );
    expect(later.heals.every((h) => Date.parse(h.at) >= T0 + 30_000)).toBe(true);
  });
});
