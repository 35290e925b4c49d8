// The corridor of a reconcile (src/observe/corridor.ts) as plan and apply walk it: the whole tree, --target.
import { reconcileCorridor, type Corridor } from '../observe/corridor.js';
import type { AppliedStateReader, GatherOptions, Gathered } from '../observe/gather.js';
import type { ServiceClient } from '../service/client.js';
import type { CommandIo } from './command.js';
import { environmentOf } from './environment.js';
import { narrowToTargets } from './partial-plan.js';
import type { ServiceSettings } from './target.js';
import type { Progress } from './tty.js';

/** What plan and apply hand the corridor. */
export interface CommandPass {
  mode: 'plan' | 'apply';
  settings: ServiceSettings;
  io: Pick<CommandIo, 'cwd' | 'env'>;
  /** The manifest directory, absolute. */
  dir: string;
  client: ServiceClient;
  applied: AppliedStateReader;
  progress: Progress;
  prune: NonNullable<GatherOptions['prune']>;
  /** --target names (none: every resource). */
  targets: readonly string[];
  /** What the command does first with what was loaded (its progress line, the applied state's note). */
  loaded?: (gathered: Gathered) => void;
}

/**
 * Loads the tree, lists the live side, plans (narrowed to --target), reads the latest revisions and decides each
 * resource once, with a health note on the plan for each rollout not healthy. Plan and apply keep no memory of holds or
 * conflicts: the daemon's (src/daemon/cycle/daemon-corridor.ts) does.
 */
export function commandCorridor(pass: CommandPass): Promise<Corridor> {
  const { settings, progress } = pass;
  return reconcileCorridor<never>({
    scope: {
      tree: {
        dir: pass.dir,
        environment: environmentOf(settings, pass.io.cwd, pass.dir),
        env: pass.io.env,
        client: pass.client,
        allowLiteralSecrets: settings.allowLiteralSecrets,
        allowLocalDiscovery: settings.allowLocalDiscovery,
        namePrefix: settings.namePrefix,
        applied: pass.applied,
        onLiveProgress: (n) => progress.show(`listing live deployments: ${n}`),
        adoptPolicy: settings.adopt,
        prune: pass.prune,
      },
    },
    decision: { mode: pass.mode, now: () => Date.now(), progressDeadlineMs: settings.progressDeadline },
    input: (gathered) => {
      pass.loaded?.(gathered);
      return narrowToTargets(gathered.input, pass.targets);
    },
    healthNotes: true,
  });
}
