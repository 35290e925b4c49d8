// --target NAME on plan and apply (a partial plan, as Terraform's -target): the option, and the gathered input narrowed to the named resources.
import { UsageError } from '../core/errors.js';
import { partialPlanInput, selectTargets } from '../plan/partial.js';
import type { PlanInput } from '../plan/plan.js';
import type { OptionSpec, ParsedArgs } from './command.js';

/** The --target option of plan and apply. */
export const TARGET_OPTION: Record<string, OptionSpec> = {
  target: {
    type: 'string',
    multiple: true,
    placeholder: 'NAME',
    resourceNames: true,
    description:
      'plan (and apply) only this resource: its metadata.name, or Kind/NAME when two kinds share the name; repeat for more. The plan says it is partial: other manifests and live resources in no manifest are not looked at, and nothing is pruned (not with --prune)',
  },
};

/**
 * The --target names given (none: the whole directory). --prune given on the command line with them is refused, as
 * Terraform refuses conflicting flags: a partial apply deletes nothing; prune from the environment or the config file is
 * not applied under --target (the plan's note says nothing is pruned).
 */
export function targetsOf(args: ParsedArgs): string[] {
  const targets = ((args.values.target as string[] | undefined) ?? []).filter((t) => t.trim() !== '');
  if (targets.length > 0 && args.values.prune === true) {
    throw new UsageError(
      '--target and --prune cannot be combined: --target plans and applies only the named resources and deletes nothing; run without --target to prune',
    );
  }
  return targets;
}

/** The input to plan: as gathered, or with --target narrowed to the named resources (an unknown NAME is a UsageError). */
export function narrowToTargets(input: PlanInput, targets: readonly string[]): PlanInput {
  if (targets.length === 0) return input;
  return partialPlanInput(input, selectTargets(targets, [...input.resources, ...input.blocked]));
}
