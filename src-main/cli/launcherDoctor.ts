import type { Config } from '../config/load'
import type { LauncherInfo } from '../contract/models'
import type { Clock } from '../lib/clock'
import type { Logger } from '../lib/logger'
import { launcherLabel, LauncherProbe } from '../models/launcherCapabilities'
import { PROBE_TIMEOUT_MS, type SshPool, type SshTarget } from '../ssh/pool'
import { shq } from '../ssh/quote'
import type { DoctorCheck } from './doctor'

export interface LauncherDoctorDeps {
  readonly config: Config
  readonly pool: SshPool
  readonly clock: Clock
  readonly logger: Logger
  /** Every image the catalog launches (the launcher's default and the entries' own). */
  readonly images: readonly string[]
}

const check = (status: DoctorCheck['status'], name: string, detail: string, fix: string | null): DoctorCheck => ({
  subject: 'node1',
  check: name,
  status,
  detail,
  fix,
})

/**
 * The launcher's generation and what it lacks (the same probe the swap uses), and whether each
 * image the catalog names is on node1: a missing one fails at launch with a pull error.
 */
export async function launcherDoctorChecks(deps: LauncherDoctorDeps): Promise<DoctorCheck[]> {
  const node1 = deps.config.nodes.node1
  if (node1 === null) return []
  const probe = new LauncherProbe({
    pool: deps.pool,
    target: node1,
    launcherDir: deps.config.llm.launcherDir,
    clock: deps.clock,
    logger: deps.logger,
  })
  const info = await probe.info()
  if (!info.found) return [check('skip', 'launcher generation', `not checked: ${info.error ?? 'no checkout'}`, null)]
  return [generationCheck(info), ...(await imageChecks(deps, node1, info))]
}

function generationCheck(info: LauncherInfo): DoctorCheck {
  const label = launcherLabel(info)
  const lacks = info.missing.filter((m) => m.capability === 'solo' || m.capability === 'extra_docker_args')
  if (lacks.length === 0) return check('ok', 'launcher generation', `${label}: ${info.capabilities.join(', ')}`, null)
  return check(
    'fail',
    'launcher generation',
    `${label}: ${lacks.map((m) => m.effect).join('; ')}`,
    'update the launcher in Services → Updates (git pull, then build-and-copy.sh)',
  )
}

async function imageChecks(deps: LauncherDoctorDeps, node1: SshTarget, info: LauncherInfo): Promise<DoctorCheck[]> {
  const images = [...new Set(deps.images)].sort()
  const script = images
    .map(
      (i) => `docker image inspect ${shq(i)} >/dev/null 2>&1 && echo ${shq(`ok ${i}`)} || echo ${shq(`missing ${i}`)}`,
    )
    .join('\n')
  let out: string
  try {
    out = (await deps.pool.exec(node1, script, { timeoutMs: PROBE_TIMEOUT_MS * 2 })).stdout
  } catch (err) {
    return [check('skip', 'llm images', `not checked: ${(err as Error).message}`, null)]
  }
  const missing = images.filter((i) => out.split('\n').includes(`missing ${i}`))
  if (missing.length === 0) return [check('ok', 'llm images', `built on node1: ${images.join(', ')}`, null)]
  const tagFlag = info.capabilities.includes('image_flag') ? ' -t <image>' : ''
  return [
    check(
      'fail',
      'llm images',
      `not on node1: ${missing.join(', ')} (a model that names one cannot launch)`,
      `build each in the launcher checkout with ./build-and-copy.sh${tagFlag} (a recipe's build_args after it; -c <node2> copies it to node2), or pull it`,
    ),
  ]
}
