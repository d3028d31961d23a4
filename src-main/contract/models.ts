import { z } from 'zod'
import { method, type ContractTable } from './define'
import { JobEvent, JobRecord } from './system'
import { EngineArgs, ImageRef, JobId, Knobs, LocalPath, ModelKey, ModelRepo, NodeName } from './schemas'

/**
 * The models methods (spec 1, 2.2–2.4, 4.2, 4.3): the catalog and its knobs, launcher recipes,
 * the memory fit estimate, weights on disk, launch validation, the model swap and downloads.
 */

/** Where a model may run: node1 alone, across both nodes, or either. */
export const ModelMode = z.enum(['solo', 'cluster', 'both'])
export type ModelMode = z.infer<typeof ModelMode>

/** How a swap or download runs: solo is node1, cluster is both nodes. */
export const RunMode = z.enum(['solo', 'cluster'])
export type RunMode = z.infer<typeof RunMode>

/** A catalog entry as written (bundled file, overrides file, POST /api/models). */
/** A recipe's path under the launcher's `recipes/`: a file name, or one folder and a file name. */
export const RecipePath = z
  .string()
  .max(260)
  .regex(
    /^(?:[A-Za-z0-9][A-Za-z0-9._-]{0,127}\/)?[A-Za-z0-9][A-Za-z0-9._-]{0,127}\.yaml$/,
    'a recipe file under recipes/',
  )
  .refine((p) => !p.split('/').includes('..'), 'no ".." segments')

/** An environment variable name, as a shell `export` takes it. */
const EnvName = z.string().regex(/^[A-Za-z_][A-Za-z0-9_]{0,127}$/, 'an environment variable name')
/** A recipe value as Python's str() renders it: one line, no command substitution (backquote, `$(`). */
const RecipeValue = z
  .string()
  .max(4096)
  .refine((v) => !/[\n\r\0`]|\$\(/.test(v), 'one line without backquotes or $( )')

/**
 * What a recipe-backed entry launches (spec 4.2): the recipe's path, which the launcher's own
 * runner reads at launch, and the parts Tandem read at import, from which it builds the same
 * launch script for a launcher that has no runner.
 */
export const RecipeSource = z.object({
  path: RecipePath,
  name: RecipeValue.pipe(z.string().max(200)),
  command: z.string().max(64 * 1024),
  defaults: z.record(EnvName, RecipeValue).default({}),
  env: z.record(EnvName, RecipeValue).default({}),
})
export type RecipeSource = z.infer<typeof RecipeSource>

/**
 * How long a placement is kept: pinned (never unloaded, always recovered) or stopped after this many
 * minutes without a request. A catalog entry's own keep applies where the placement request names none.
 */
export const PlacementKeep = z.union([
  z.object({ pinned: z.literal(true) }).strict(),
  z.object({ ttl_min: z.number().int().min(1).max(10_080) }).strict(),
])
export type PlacementKeep = z.infer<typeof PlacementKeep>

export const ModelDefFields = z.object({
  key: ModelKey,
  name: z.string().trim().min(1).max(200),
  repo: ModelRepo.optional(),
  local_path: LocalPath.optional(),
  engine_args: EngineArgs.default([]),
  /** A chat template file; for a local model it must lie inside local_path. */
  chat_template: z.string().max(1024).optional(),
  mode: ModelMode.default('solo'),
  /** The image the launcher runs this model in (`-t`); default the launcher's own `vllm-node`. */
  container: ImageRef.optional(),
  /** Launcher mods the model needs (a recipe's `mods`): the launcher applies them; Tandem shows them. */
  mods: z.array(z.string().trim().min(1).max(300)).max(32).optional(),
  /** Build arguments of the model's image (a recipe's `build_args`): what build-and-copy.sh must be given. */
  build_args: z.array(z.string().trim().min(1).max(300)).max(64).optional(),
  /** The launcher recipe the entry was imported from: launched through it. */
  recipe: RecipeSource.optional(),
  /** Approximate weights size, for the fit estimate before the weights are on disk. */
  size_bytes: z
    .number()
    .int()
    .min(0)
    .max(10 ** 13)
    .optional(),
  description: z.string().max(2000).optional(),
  /** Kept pinned or for an idle ttl when placed without saying; absent: pinned by the operator, the ttl setting on demand. */
  keep: PlacementKeep.optional(),
})

/**
 * The shape rules every entry must pass (spec 1, 2.2): exactly one source; the local path inside
 * an allowed root and the chat template inside it are checked by the catalog, which knows the roots.
 */
export const ModelDef = ModelDefFields.superRefine((m, ctx) => {
  if ((m.repo === undefined) === (m.local_path === undefined))
    ctx.addIssue({ code: 'custom', path: ['repo'], message: 'exactly one of repo and local_path is required' })
})
export type ModelDef = z.infer<typeof ModelDef>

export const ModelTag = z.enum(['bundled', 'custom', 'local', 'recipe'])

export const FitVerdict = z.enum(['fits', 'tight', 'no_fit', 'unknown'])

/** What a model needs on each node against what the node has (spec: "will it fit"). */
export const FitEstimate = z.object({
  mode: RunMode,
  verdict: FitVerdict,
  nodes: z.array(
    z.object({
      node: NodeName,
      weights_bytes: z.number().nullable(),
      kv_cache_bytes: z.number().nullable(),
      need_bytes: z.number().nullable(),
      /** Node RAM × gpu-memory-utilization; null when the node could not be read. */
      budget_bytes: z.number().nullable(),
      ram_total_bytes: z.number().nullable(),
      /** Memory held on the node by processes a placement there would not stop (speech services, other work). */
      other_bytes: z.number().nullable().default(null),
      verdict: FitVerdict,
    }),
  ),
  /** How the figures were found, and what was missing. */
  notes: z.array(z.string()),
})
export type FitEstimate = z.infer<typeof FitEstimate>

export const ModelView = ModelDefFields.extend({
  tags: z.array(ModelTag),
  /** The knob values in force: the override's, else those seeded from the bundled args. */
  effective_knobs: Knobs,
  /** The engine args a launch passes: bundled args with the knobs applied. */
  launch_args: z.array(z.string()),
  loaded: z.boolean(),
  /** The placements serving this model (ids such as node2 or node3+node4). */
  placed_on: z.array(z.string()).default([]),
})
export type ModelView = z.infer<typeof ModelView>

export const DiskEntry = z.object({
  node: NodeName,
  present: z.boolean(),
  bytes: z.number().nullable(),
  path: z.string(),
  error: z.string().nullable(),
})

export const DiskStatus = z.object({
  models: z.array(
    z.object({
      key: z.string(),
      on_disk: z.boolean(),
      /**
       * Nodes probed: node1 for solo models, node1 and node2 for cluster, and every configured node past
       * node2. `on_disk` is about the first two: present on each node the model's mode runs on.
       */
      nodes: z.array(DiskEntry),
    }),
  ),
  checked_at: z.number(),
})
export type DiskStatus = z.infer<typeof DiskStatus>

export const Recipe = z.object({
  /** The import handle: the file name without `.yaml`, a subfolder's recipe prefixed `<folder>--`. */
  name: z.string(),
  /** The file under `recipes/`. */
  path: z.string().default(''),
  description: z.string(),
  solo: z.boolean(),
  cluster: z.boolean(),
  /**
   * Sparks a run needs: tensor × pipeline × data parallel of its command (one GPU per Spark, the
   * launcher's rule); null when the command could not be read.
   */
  nodes_needed: z.number().int().min(1).nullable(),
  /** Whether it can be imported and run on the nodes configured here; `reason` says why not. */
  runnable: z.boolean(),
  reason: z.string().nullable(),
  /** The entry the recipe describes (import creates it when runnable), or null when the validator refuses it. */
  model: ModelDefFields.nullable(),
  error: z.string().nullable(),
})

export const ValidationResult = z.object({
  /**
   * true: the engine's parser accepts the arguments; false: definitive (the parser, the launcher or
   * the missing image refuses); null: the validation itself could not run (connection, timeout, its
   * container, a mod that cannot be applied there), so nothing is known either way.
   */
  ok: z.boolean().nullable(),
  /** Where it stopped: build (argument list), connect, launcher, image, mods, container, parser, done. */
  stage: z.string(),
  error: z.string().nullable(),
  cmd_args: z.array(z.string()),
  launch_cmd: z.string(),
  /** Which vLLM module supplied the parser. */
  parser: z.string().nullable(),
})
export type ValidationResult = z.infer<typeof ValidationResult>

export const SwapPhase = z.enum(['validating', 'stopping', 'launching', 'loading', 'ready', 'rolling_back', 'failed'])
export type SwapPhase = z.infer<typeof SwapPhase>

/** How a swap phase reads in job records and in the dashboard. */
export const SWAP_PHASE_TITLES: Readonly<Record<SwapPhase, string>> = {
  validating: 'Validating',
  stopping: 'Stopping the current engine',
  launching: 'Launching',
  loading: 'Loading',
  ready: 'Ready',
  rolling_back: 'Rolling back to the previous model',
  failed: 'Failed',
}

/**
 * What the launcher checkout on node1 can do, read from its scripts (DESIGN.md, The launcher: two
 * generations are in the field). Commands are built for what is there; what is missing is named.
 */
export const LauncherCapability = z.enum([
  /** `--solo`: one node, no Ray cluster. */
  'solo',
  /** `-t <image>`. */
  'image_flag',
  /** `--name <container>`. */
  'name_flag',
  /** `-d exec` dispatches the command and leaves the cluster running. */
  'daemon_exec',
  /** `exec` keeps each command word intact (`printf %q`), so JSON engine args survive. */
  'quoted_exec',
  /** `--ray`/`--no-ray`: the launcher picks the distributed backend and adds its own arguments. */
  'backend_flag',
  /** VLLM_SPARK_EXTRA_DOCKER_ARGS reaches `docker run` (a local model's bind mount). */
  'extra_docker_args',
  /** `--apply-mod <dir>`. */
  'apply_mod',
  /** The hub cache mounted from HF_HOME when set. */
  'hf_home',
  /** A `recipes/` folder. */
  'recipes',
  'download_script',
  'build_script',
  /** `-n <addresses>`: the nodes to run on, head first. */
  'nodes_flag',
  /** `--launch-script <file>`: a script copied into the container and run there (env, then the command). */
  'launch_script',
  /** Several nodes run without Ray unless `--ray` is given (the launcher's default since 2026-07). */
  'no_ray_default',
  /** `run-recipe.py` with a Python that has PyYAML: the launcher's own recipe runner. */
  'run_recipe',
])
export type LauncherCapability = z.infer<typeof LauncherCapability>

export const LauncherInfo = z.object({
  /** The node whose checkout this is (a placement's head runs the launcher). */
  node: NodeName.default('node1'),
  /** The checkout exists on that node with a launch-cluster.sh. */
  found: z.boolean(),
  dir: z.string(),
  commit: z.string().nullable(),
  commit_date: z.string().nullable(),
  subject: z.string().nullable(),
  /** early-2026 (no --solo, unquoted exec), mid-2026 (--solo, quoted -d exec, Ray), late-2026 (--ray/--no-ray). */
  generation: z.enum(['early-2026', 'mid-2026', 'late-2026', 'unknown']),
  capabilities: z.array(LauncherCapability),
  /** What Tandem would use but this launcher lacks, and what it costs. */
  missing: z.array(z.object({ capability: LauncherCapability, effect: z.string() })),
  checked_at: z.number(),
  error: z.string().nullable(),
})
export type LauncherInfo = z.infer<typeof LauncherInfo>

/** How a model is laid out on the nodes: solo on node1, or tensor parallel across the cluster. */
export const Layout = z.object({
  mode: RunMode,
  nodes: z.array(NodeName),
  tensor_parallel: z.number().int().min(1),
  /** `ray` when Tandem adds it, `launcher` when the launcher picks it, null for solo. */
  backend: z.enum(['ray', 'launcher', 'entry']).nullable(),
})
export type Layout = z.infer<typeof Layout>

export const LoadedModel = z.object({
  key: z.string().nullable(),
  /** The name the llm serves (its /v1/models id). */
  served: z.string(),
  mode: RunMode.nullable(),
  since: z.number().nullable(),
  /** The layout it was launched with; null when Tandem did not launch it (found running at start). */
  layout: Layout.nullable().default(null),
})

export const SwapView = z.object({
  loaded: LoadedModel.nullable(),
  job: JobRecord.nullable(),
  /** The swap in progress: target, phase and an ETA from the last load of that model. */
  swapping: z
    .object({
      key: z.string(),
      mode: RunMode,
      phase: SwapPhase,
      eta_s: z.number().nullable(),
      layout: Layout.nullable(),
    })
    .nullable(),
})
export type SwapView = z.infer<typeof SwapView>

/**
 * A placement job's phase change and the model that ends up loaded: the `step` of `placements.changed`.
 * Also published alone as the `swap.state` push event, an alias kept for one release for outside
 * clients (Tandem's own consumers read the step of `placements.changed`).
 */
export const SwapStateEvent = z.object({
  key: z.string(),
  mode: RunMode,
  phase: SwapPhase,
  job_id: z.string(),
  loaded: LoadedModel.nullable(),
  detail: z.string().nullable(),
  /** The placement the job places or stops (docs/placements.md). */
  placement_id: z.string().default('node1'),
  /** Every node the job touches: its own and those of the placements it displaces. */
  nodes: z.array(NodeName).default(['node1']),
  /** The placements the job stops to run its own (a swap); empty when it places on free nodes. */
  replaces: z.array(z.string()).default([]),
})

/**
 * Where a download lands: one node (`node1`, `node2`, `node3`…; the daemon refuses one that is not
 * configured), `both` (node1 and node2) or `all` (every configured node).
 */
export const DownloadTarget = z.union([z.enum(['both', 'all']), NodeName])
export type DownloadTarget = z.infer<typeof DownloadTarget>

const KeyParam = z.object({ key: ModelKey })

export const modelsContract = {
  listModels: method({
    summary: 'The effective catalog: bundled entries, then custom entries and knob overrides',
    http: 'GET /api/models',
    input: z.object({}),
    output: z.array(ModelView),
  }),
  addModel: method({
    summary: 'Add a custom catalog entry (exactly one of repo and local_path); persisted to the overrides file',
    http: 'POST /api/models',
    input: ModelDef,
    output: ModelView,
  }),
  deleteModel: method({
    summary: 'Remove a custom entry (bundled entries answer 409)',
    http: 'DELETE /api/models/:key',
    input: KeyParam,
    output: z.object({ deleted: z.literal(true) }),
  }),
  setKnobs: method({
    summary: "Set a model's knobs (persisted to the overrides file); null clears one",
    http: 'PUT /api/models/:key/knobs',
    input: KeyParam.extend({ knobs: Knobs }),
    output: ModelView,
  }),
  modelFit: method({
    summary:
      'Memory a model needs per node in a mode or on chosen nodes (`nodes=node2,node3`, head first), against live RAM × gpu-memory-utilization and what other processes hold',
    http: 'GET /api/models/:key/fit',
    input: KeyParam.extend({
      mode: RunMode.optional(),
      nodes: z
        .preprocess(
          (v) => (typeof v === 'string' ? v.split(',').filter((n) => n !== '') : v),
          z.array(NodeName).min(1).max(64),
        )
        .optional(),
    }),
    output: FitEstimate,
  }),
  listRecipes: method({
    summary: "The launcher checkout's recipes on node1, each with the entry an import would create",
    http: 'GET /api/models/recipes',
    input: z.object({}),
    output: z.object({ recipes: z.array(Recipe), hint: z.string().nullable() }),
  }),
  importRecipe: method({
    summary: 'Turn a launcher recipe into a custom catalog entry; 409 when it needs more nodes than are configured',
    http: 'POST /api/models/recipes/:name/import',
    input: z.object({ name: z.string().regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/, 'a recipe name') }),
    output: ModelView,
  }),
  diskStatus: method({
    summary: 'Weights on disk per model and node, all probed in parallel',
    http: 'GET /api/models/disk-status',
    input: z.object({}),
    output: DiskStatus,
  }),
  deleteWeights: method({
    summary:
      'Remove a model’s weights from every node disk status probes for it (node1, node2 for cluster models, node3…); 409 for a placed model',
    http: 'DELETE /api/models/:key/disk',
    input: KeyParam,
    output: z.object({
      deleted: z.array(z.object({ node: NodeName, path: z.string(), bytes: z.number().nullable() })),
    }),
  }),
  validateLaunch: method({
    summary: "Run vLLM's own argument parser on the exact launch arguments, without starting the engine",
    http: 'POST /api/swap/:key/validate',
    input: KeyParam.extend({ mode: RunMode.optional() }),
    output: ValidationResult,
  }),
  startSwap: method({
    summary: 'Swap the model loaded in the llm (a job); 409 while a swap or download runs',
    http: 'POST /api/swap/:key',
    input: KeyParam.extend({ mode: RunMode.optional(), confirm_no_fit: z.boolean().optional() }),
    output: z.object({ job_id: z.string() }),
  }),
  swapState: method({
    summary: 'The loaded model, its mode and since when, and the swap in progress',
    http: 'GET /api/swap',
    input: z.object({}),
    output: SwapView,
  }),
  launcherInfo: method({
    summary: 'What the launcher checkout on node1 is and can do (read once per connection and after an update)',
    http: 'GET /api/launcher',
    input: z.object({ refresh: z.union([z.boolean(), z.stringbool()]).optional() }),
    output: LauncherInfo,
  }),
  startDownload: method({
    summary:
      "Download weights with the launcher's hf-download.sh (a job) to a node, `both` (node1+node2) or `all`; one at a time",
    http: 'POST /api/download',
    input: z.object({
      repo: ModelRepo,
      mode: RunMode.optional(),
      target: DownloadTarget.optional(),
    }),
    output: z.object({ job_id: z.string() }),
  }),
  getDownload: method({
    summary: 'One download job',
    http: 'GET /api/download/:id',
    input: z.object({ id: JobId }),
    output: JobRecord,
  }),
  streamDownload: method({
    summary: 'A download’s phases, log and progress: everything so far, then live until it ends',
    http: 'GET /api/download/:id/stream',
    stream: true,
    input: z.object({ id: JobId, after: z.coerce.number().int().min(0).optional() }),
    output: JobEvent,
  }),
} satisfies ContractTable
