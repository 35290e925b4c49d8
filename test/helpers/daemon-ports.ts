// Fakes of the inner reconcile's ports (src/daemon/cycle/cycle-context.ts) as plain maps: the queue, applied state, memory, holds, conflicts.
import type { ResourceHold } from '../../src/core/holds.js';
import type { Conflict } from '../../src/core/flap-guard.js';
import type { AppliedRecord } from '../../src/core/model.js';
import type { Enqueued } from '../../src/jobs/queue/enqueuer.js';
import type { ReconcileJobData } from '../../src/store/schema.js';
import type { CycleContext } from '../../src/daemon/cycle/cycle-context.js';

/** The queue as the loop sees it: every job data handed over, answered as `answer` says per resource (default: added). */
export class FakeEnqueuer {
  readonly added: ReconcileJobData[] = [];
  answer = new Map<string, Enqueued['how']>();
  private next = 1;

  enqueue: CycleContext['enqueuer']['enqueue'] = (datas, onEnqueued) => {
    const out = datas.map((data, i) => {
      const how = this.answer.get(data.key) ?? 'added';
      const enqueued: Enqueued = {
        key: data.key,
        jobId: how === 'added' ? `${data.key}@${this.next++}` : `${data.key}@earlier`,
        how,
      };
      if (how === 'added') this.added.push(data);
      onEnqueued?.(enqueued, i);
      return enqueued;
    });
    return Promise.resolve(out);
  };

  inFlightJob: CycleContext['enqueuer']['inFlightJob'] = () => Promise.resolve(undefined);
}

/** The daemon's stores as plain maps: applied state, the memory of in-sync desired states, holds, conflicts. */
export function fakePorts() {
  const applied = new Map<string, AppliedRecord>();
  const remembered = new Map<string, string>();
  const holds = new Map<string, ResourceHold>();
  const conflicts = new Map<string, Conflict>();
  return {
    applied,
    remembered,
    holds,
    conflicts,
    ports: {
      applied: {
        getAll: () => Promise.resolve(new Map(applied)),
        get: (key: string) => Promise.resolve(applied.get(key)),
        pendingKeys: () => Promise.resolve(new Set<string>()),
      },
      memory: {
        getAll: () => Promise.resolve(new Map(remembered)),
        getSome: (keys: Iterable<string>) =>
          Promise.resolve(
            new Map([...keys].flatMap((k) => (remembered.has(k) ? [[k, remembered.get(k)!] as const] : []))),
          ),
        set: (entries: ReadonlyMap<string, string>) => {
          for (const [k, v] of entries) remembered.set(k, v);
          return Promise.resolve();
        },
        retain: (keys: ReadonlySet<string>) => {
          const gone = [...remembered.keys()].filter((k) => !keys.has(k));
          for (const k of gone) remembered.delete(k);
          return Promise.resolve(gone.length);
        },
      },
      holds: {
        getAll: () => Promise.resolve(new Map(holds)),
        set: (key: string, hold: ResourceHold) => Promise.resolve(void holds.set(key, hold)),
        release: (keys: readonly string[]) => Promise.resolve(keys.filter((k) => holds.delete(k)).length),
      },
      conflicts: {
        all: () => Promise.resolve(new Map(conflicts)),
        release: (keys: readonly string[]) => Promise.resolve(keys.filter((k) => conflicts.delete(k))),
      },
    },
  };
}
