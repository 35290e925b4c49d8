// Wire schema of a deployment's resource_spec (the service's interface): containers, volumes, sizes, scale rules.
import { z } from 'zod';

export const VolumeMount = z.strictObject({
  name: z.string(),
  mountPath: z.string(),
  subPath: z.string().optional(),
  mountPropagation: z.string().optional(),
  subPathExpr: z.string().optional(),
  readOnly: z.boolean().optional(),
});
export type VolumeMount = z.infer<typeof VolumeMount>;

const FreeObject = z.record(z.string(), z.unknown());

export const Volume = z.strictObject({
  name: z.string(),
  configMap: FreeObject.optional(),
  secret: FreeObject.optional(),
  emptyDir: FreeObject.optional(),
  persistentVolumeClaim: FreeObject.optional(),
  nfs: FreeObject.optional(),
  projected: FreeObject.optional(),
  downwardAPI: FreeObject.optional(),
  csi: FreeObject.optional(),
});
export type Volume = z.infer<typeof Volume>;

export const Container = z.strictObject({
  name: z.string(),
  image: z.string().optional(),
  imagePullPolicy: z.string().optional(),
  workingDir: z.string().optional(),
  restartPolicy: z.string().optional(),
  command: z.array(z.string()).optional(),
  args: z.array(z.string()).optional(),
  env: z
    .array(z.strictObject({ name: z.string(), value: z.string().optional(), valueFrom: FreeObject.optional() }))
    .optional(),
  envFrom: z.array(FreeObject).optional(),
  resources: z.strictObject({ limits: FreeObject.optional(), requests: FreeObject.optional() }).optional(),
  volumeMounts: z.array(VolumeMount).optional(),
  securityContext: FreeObject.optional(),
});
export type Container = z.infer<typeof Container>;

/** ResourceSpec numeric fields; cpu values may be fractional, the others are whole numbers. */
export const RESOURCE_SPEC_CPU_FIELDS = [
  'cpu',
  'cpu_limit',
  'queue_cpu',
  'queue_cpu_limit',
  'orchestrator_cpu',
  'orchestrator_cpu_limit',
  'executor_cpu',
  'executor_cpu_limit',
  'redis_cpu',
  'redis_cpu_limit',
  'db_cpu',
  'db_cpu_limit',
] as const;
export const RESOURCE_SPEC_INT_FIELDS = [
  'min_scale',
  'max_scale',
  'memory_mb',
  'memory_limit_mb',
  'queue_min_scale',
  'queue_max_scale',
  'queue_memory_mb',
  'queue_memory_limit_mb',
  'orchestrator_memory_mb',
  'orchestrator_memory_limit_mb',
  'orchestrator_min_scale',
  'orchestrator_max_scale',
  'executor_memory_mb',
  'executor_memory_limit_mb',
  'redis_memory_mb',
  'redis_memory_limit_mb',
  'db_memory_mb',
  'db_memory_limit_mb',
  'db_storage_gi',
  'db_max_connections',
] as const;
/** Pairs that must satisfy min <= max. */
export const RESOURCE_SPEC_SCALE_PAIRS = [
  ['min_scale', 'max_scale'],
  ['queue_min_scale', 'queue_max_scale'],
  ['orchestrator_min_scale', 'orchestrator_max_scale'],
] as const;

const cpuShape = Object.fromEntries(RESOURCE_SPEC_CPU_FIELDS.map((f) => [f, z.number().nonnegative().nullish()]));
const intShape = Object.fromEntries(RESOURCE_SPEC_INT_FIELDS.map((f) => [f, z.number().int().nonnegative().nullish()]));

export const ResourceSpec = z.strictObject({
  ...(cpuShape as Record<(typeof RESOURCE_SPEC_CPU_FIELDS)[number], z.ZodOptional<z.ZodNullable<z.ZodNumber>>>),
  ...(intShape as Record<(typeof RESOURCE_SPEC_INT_FIELDS)[number], z.ZodOptional<z.ZodNullable<z.ZodNumber>>>),
  labels: z.record(z.string(), z.string()).nullish(),
  annotations: z.record(z.string(), z.string()).nullish(),
  service_account_name: z.string().nullish(),
  image_pull_secrets: z.array(z.strictObject({ name: z.string() })).nullish(),
  volumes: z.array(Volume).nullish(),
  volume_mounts: z.array(VolumeMount).nullish(),
  init_containers: z.array(Container).nullish(),
  sidecars: z.array(Container).nullish(),
});
export type ResourceSpec = z.infer<typeof ResourceSpec>;

/** Cross-field rules of a ResourceSpec: each min scale at most its max. Returns [path, message] pairs. */
export function resourceSpecProblems(
  spec: Partial<Record<string, unknown>>,
): Array<{ path: string[]; message: string }> {
  const problems: Array<{ path: string[]; message: string }> = [];
  for (const [min, max] of RESOURCE_SPEC_SCALE_PAIRS) {
    const lo = spec[min];
    const hi = spec[max];
    if (typeof lo === 'number' && typeof hi === 'number' && lo > hi) {
      problems.push({ path: [min], message: `${min} (${lo}) must not exceed ${max} (${hi})` });
    }
  }
  return problems;
}
