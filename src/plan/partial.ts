// --target NAME (pure): which declared resources the names select, and the plan input narrowed to them (a partial plan, as Terraform's -target).
import { UsageError } from '../core/errors.js';
import { declaredProviderIds, inListing, isKind, KIND_NAMES } from '../core/kinds/index.js';
import { didYouMean as suggestion } from '../core/did-you-mean.js';
import { resourceKey, type LiveState, type ResourceKind } from '../core/model.js';
import type { PlanInput } from './plan.js';

/** A resource the manifests declare (valid or blocked): what a --target NAME is matched against. */
interface Declared {
  kind: ResourceKind;
  name: string;
}

/** The key one --target selects: `Kind/name`, or a bare name that exactly one declared resource has. */
function selectOne(target: string, declared: readonly Declared[]): string {
  const slash = target.indexOf('/');
  if (slash !== -1) {
    const kind = target.slice(0, slash);
    const name = target.slice(slash + 1);
    if (!isKind(kind))
      throw new UsageError(
        `--target "${target}": ${kind} is not a kind${suggestion(kind, KIND_NAMES)}; give NAME or Kind/NAME, Kind one of ${KIND_NAMES.join(', ')}`,
      );
    if (declared.some((d) => d.kind === kind && d.name === name)) return resourceKey(kind, name);
    const keys = declared.map((d) => resourceKey(d.kind, d.name));
    throw new UsageError(`--target "${target}": no manifest declares it${suggestion(target, keys)}`);
  }
  const matches = declared.filter((d) => d.name === target);
  if (matches.length === 1) return resourceKey(matches[0]!.kind, target);
  if (matches.length > 1) {
    const keys = matches.map((d) => resourceKey(d.kind, d.name)).sort();
    throw new UsageError(
      `--target "${target}": more than one kind declares that name (${keys.join(', ')}); give Kind/NAME, e.g. --target ${keys[0]}`,
    );
  }
  throw new UsageError(
    `--target "${target}": no manifest declares it${suggestion(target, [...new Set(declared.map((d) => d.name))])}`,
  );
}

/**
 * The resource keys the --target names select (NAME or Kind/NAME, each once, in the order given). A name no manifest
 * declares, a kind that does not exist, or a bare name two kinds declare is a UsageError naming it (with "did you mean").
 */
export function selectTargets(targets: readonly string[], declared: readonly Declared[]): string[] {
  const keys: string[] = [];
  for (const target of targets) {
    const key = selectOne(target.trim(), declared);
    if (!keys.includes(key)) keys.push(key);
  }
  return keys;
}

/**
 * The plan input narrowed to the resources of `keys`: their manifests (valid or blocked), their live resources (the
 * listed deployments and the providers of those names), and no prune. Nothing else is paired, so nothing else becomes a
 * change or an orphan; the plan carries `targets` and says it is partial.
 */
export function partialPlanInput(input: PlanInput, keys: readonly string[]): PlanInput {
  const wanted = new Set(keys);
  const selected = <T extends Declared>(items: readonly T[]): T[] =>
    items.filter((r) => wanted.has(resourceKey(r.kind, r.name)));
  const resources = selected(input.resources);
  const blocked = selected(input.blocked);
  const listedNames = new Set([...resources, ...blocked].filter((r) => inListing(r.kind)).map((r) => r.name));
  const providerIds = declaredProviderIds([...resources, ...blocked]);
  const { prune: _prune, ...rest } = input;
  const live: LiveState = { deployments: input.live.deployments.filter((d) => listedNames.has(d.name)) };
  const providers = input.live.providers;
  if (providers)
    live.providers = providers.readable
      ? { readable: true, providers: providers.providers.filter((p) => providerIds.has(p.provider_id)) }
      : providers;
  return { ...rest, resources, blocked, live, targets: [...keys] };
}
