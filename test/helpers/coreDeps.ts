import type { Config } from '../../src-main/config/load'
import { systemClock, type Clock } from '../../src-main/lib/clock'
import { EventBus } from '../../src-main/platform/eventBus'
import { Limits } from '../../src-main/platform/limits'
import { createLogger, MemorySink, type Logger } from '../../src-main/lib/logger'
import type { CoreDeps } from '../../src-main/platform/domainModule'
import { JobRegistry } from '../../src-main/platform/jobs'

/** Everything a domain module is built from, for tests that build one module without the whole core. */
export function testCoreDeps(opts: { config: Config; clock?: Clock; logger?: Logger }): CoreDeps {
  const clock = opts.clock ?? systemClock
  const logger = opts.logger ?? createLogger({ sink: new MemorySink() })
  const events = new EventBus(clock)
  return {
    config: opts.config,
    clock,
    logger,
    events,
    jobs: new JobRegistry(clock, logger.redactor, events),
    limits: new Limits({ clock, publicPerMinute: opts.config.licensingRateLimit }),
  }
}
