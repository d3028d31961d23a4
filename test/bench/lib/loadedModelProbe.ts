/** Latencies of a loaded model's `url` (its /v1/models), asked every 10 ms until `until` resolves. */
export async function probeWhile(url: string, until: Promise<unknown>): Promise<{ ms: number[]; failed: number }> {
  const ms: number[] = []
  let failed = 0
  let done = false
  void until.finally(() => (done = true))
  while (!done) {
    const t0 = performance.now()
    try {
      const res = await fetch(url)
      if (!res.ok) failed++
      await res.arrayBuffer()
      ms.push(performance.now() - t0)
    } catch {
      failed++
    }
    await new Promise((r) => setTimeout(r, 10))
  }
  return { ms, failed }
}

/** The q-quantile of a sample (nearest rank); NaN for an empty one. */
export function quantile(xs: readonly number[], q: number): number {
  const s = [...xs].sort((a, b) => a - b)
  return s[Math.min(s.length - 1, Math.floor(q * s.length))] ?? NaN
}

/**
 * Runs `validate` `runs` times while the loaded model at `llmUrl` is asked every 10 ms, and prints
 * the validation's wall time and what it cost the loaded model (its p99 during validations against
 * before them), each as met / not met. A validation that does not answer ok=true stops the bench.
 */
export async function benchValidations(opts: {
  readonly llmUrl: string
  readonly runs: number
  readonly label: string
  readonly validate: () => Promise<Response>
}): Promise<void> {
  const idle = await probeWhile(opts.llmUrl, new Promise((r) => setTimeout(r, 1000)))
  const walls: number[] = []
  const during: number[] = []
  let failed = 0
  for (let i = 0; i < opts.runs; i++) {
    const t0 = performance.now()
    const validation = opts.validate()
    const probe = probeWhile(opts.llmUrl, validation)
    const body = (await (await validation).json()) as { ok: boolean | null; stage: string; error: string | null }
    walls.push(performance.now() - t0)
    if (body.ok !== true) throw new Error(`validation ${i}: ok=${String(body.ok)} ${body.stage} ${body.error}`)
    const seen = await probe
    during.push(...seen.ms)
    failed += seen.failed
  }
  const median = quantile(walls, 0.5)
  console.log(
    `${opts.label}: median ${median.toFixed(0)} ms, max ${Math.max(...walls).toFixed(0)} ms over ${opts.runs} — ${median < 2000 ? 'met' : 'not met'} (target < 2 s on the sim)`,
  )
  const idleP99 = quantile(idle.ms, 0.99)
  const duringP99 = quantile(during, 0.99)
  console.log(
    `loaded model's /v1/models: idle p99 ${idleP99.toFixed(1)} ms, during validations p99 ${duringP99.toFixed(1)} ms over ${during.length} requests, ${failed} failed — ${failed === 0 && duringP99 - idleP99 < 20 ? 'met' : 'not met'} (no failure, p99 within 20 ms)`,
  )
}
