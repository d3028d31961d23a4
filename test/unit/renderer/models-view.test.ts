// @vitest-environment happy-dom
import { afterEach, describe, expect, it, vi } from 'vitest'
import { BackendError, type BackendApi, type OutputOf } from '../../../src-renderer/api'
import { button, buttons, flush, mountWith, unmountAll } from './mount'
import { hardwareRow, stepEvent } from './fixtures'
import { contract } from '../../../src-main/contract'
import { parseInput } from '../../../src-main/app/invoke'
import ModelsView from '../../../src-renderer/views/ModelsView.vue'

const T = Date.now()
const GB = 1e9

const model = (key: string, over: Record<string, unknown> = {}) => ({
  key,
  name: `Model ${key}`,
  repo: `org/${key}`,
  engine_args: ['--max-model-len', '32768'],
  mode: 'solo',
  size_bytes: 60 * GB,
  tags: ['bundled'],
  effective_knobs: { 'max-model-len': 32768, 'gpu-memory-utilization': 0.8 },
  launch_args: ['--max-model-len', '32768', '--gpu-memory-utilization', '0.8'],
  loaded: false,
  ...over,
})

const catalog = [
  model('qwen-a', { loaded: true, name: 'Qwen A' }),
  model('big-moe', { name: 'Big MoE', mode: 'cluster', size_bytes: 400 * GB }),
  model('mine', { name: 'My Finetune', repo: undefined, local_path: '/data/models/mine', tags: ['custom', 'local'] }),
]

const diskEntry = (node: string, present: boolean, bytes: number | null) => ({
  node,
  present,
  bytes,
  path: `/home/u/.cache/huggingface/hub/models--org--x`,
  error: null,
})

const fit = (verdict: string, mode = 'solo') => ({
  mode,
  verdict,
  nodes: [
    {
      node: 'node1',
      weights_bytes: 200 * GB,
      kv_cache_bytes: 10 * GB,
      need_bytes: 210 * GB,
      budget_bytes: 102 * GB,
      ram_total_bytes: 128 * GB,
      verdict,
    },
  ],
  notes: ['weights from the catalog size'],
})

type Call = { method: string; input: Record<string, unknown> }
type Sub = { method: string; input: Record<string, unknown>; onEvent: (e: unknown) => void; closed: boolean }
type Answer = unknown | ((input: Record<string, unknown>) => unknown)

function fakeApi(calls: Call[], subs: Sub[], over: Record<string, Answer> = {}): BackendApi {
  const answers: Record<string, Answer> = {
    listModels: catalog,
    diskStatus: {
      models: [
        { key: 'qwen-a', on_disk: true, nodes: [diskEntry('node1', true, 61 * GB)] },
        {
          key: 'big-moe',
          on_disk: true,
          nodes: [diskEntry('node1', true, 400 * GB), diskEntry('node2', true, 400 * GB)],
        },
        { key: 'mine', on_disk: true, nodes: [diskEntry('node1', true, 30 * GB)] },
      ],
      checked_at: T,
    },
    swapState: {
      loaded: { key: 'qwen-a', served: 'org/qwen-a', mode: 'solo', since: T - 2 * 3600_000 },
      job: null,
      swapping: null,
    },
    getHardware: { node1: hardwareRow('node1', T), node2: hardwareRow('node2', T), taken_at: T },
    listJobs: [],
    modelFit: (i: Record<string, unknown>) => fit(i.key === 'big-moe' ? 'no_fit' : 'fits', String(i.mode)),
    validateLaunch: {
      ok: true,
      stage: 'done',
      error: null,
      cmd_args: ['serve', 'org/x'],
      launch_cmd: './launch-cluster.sh --solo -d',
      parser: 'vllm.entrypoints.cli.serve',
    },
    startSwap: { job_id: 'swap-1' },
    deleteWeights: {
      deleted: [
        { node: 'node1', path: '/x', bytes: 400 * GB },
        { node: 'node2', path: '/x', bytes: 400 * GB },
      ],
    },
    startDownload: { job_id: 'dl-1' },
    getJob: (i: Record<string, unknown>) => ({
      id: i.id,
      kind: 'download',
      title: 'Download Qwen/Qwen3-8B to node1 and node2',
      state: 'succeeded',
      phase: 'Done',
      started_at: T,
      finished_at: T + 50_000,
      elapsed_s: 50,
      progress: { percent: 100, bytes_done: 5 * GB, bytes_total: 5 * GB, rate: null, eta_s: null },
      log: [],
      result: { repo: 'Qwen/Qwen3-8B', target: 'both', nodes: ['node1', 'node2'] },
      error: null,
    }),
    cancelJob: {},
    ...over,
  }
  return {
    transport: 'http',
    call: (async (method: string, input: Record<string, unknown>) => {
      calls.push({ method, input })
      const a = answers[method]
      const out = typeof a === 'function' ? (a as (i: Record<string, unknown>) => unknown)(input) : a
      return structuredClone(await out)
    }) as BackendApi['call'],
    subscribe: ((method: string, input: Record<string, unknown>, h: { onEvent: (e: unknown) => void }) => {
      const sub: Sub = { method, input, onEvent: h.onEvent, closed: false }
      subs.push(sub)
      return () => (sub.closed = true)
    }) as BackendApi['subscribe'],
  }
}

afterEach(() => {
  unmountAll()
  vi.useRealTimers()
})

const card = (el: HTMLElement, key: string) => el.querySelector(`[data-key="${key}"]`) as HTMLElement
function type(input: Element | null, value: string): void {
  const i = input as HTMLInputElement
  i.value = value
  i.dispatchEvent(new Event('input'))
}

describe('Models view: catalog', () => {
  it('lists entries with tags, the loaded model with mode and uptime, fit badges and weights per node', async () => {
    const calls: Call[] = []
    const el = await mountWith(ModelsView, fakeApi(calls, []))
    const cards = [...el.querySelectorAll('article.model')]
    expect(cards.map((c) => c.getAttribute('data-key'))).toEqual(['qwen-a', 'big-moe', 'mine'])
    expect(cards[0]!.classList.contains('loaded')).toBe(true)
    expect(card(el, 'qwen-a').textContent).toContain('loaded · solo · up 2h 0m')
    expect(el.querySelector('.loaded-bar')?.textContent).toContain('Qwen A')
    const mine = card(el, 'mine')
    expect([...mine.querySelectorAll('.tag')].map((t) => t.textContent)).toEqual(['custom', 'local'])
    // A local entry shows its path, not a repo link.
    expect(mine.textContent).toContain('/data/models/mine')
    expect(mine.querySelector('a')).toBeNull()
    const moe = card(el, 'big-moe')
    expect(moe.querySelector('.badge.bad')?.textContent).toBe('does not fit')
    expect(moe.textContent).toContain('node1: 400 GB')
    expect(moe.textContent).toContain('node2: 400 GB')
    expect(calls.filter((c) => c.method === 'modelFit').map((c) => c.input)).toContainEqual({
      key: 'big-moe',
      mode: 'cluster',
    })
    // Filters: by tag.
    const tag = el.querySelector('select[aria-label="Tag"]') as HTMLSelectElement
    tag.value = 'custom'
    tag.dispatchEvent(new Event('change'))
    await flush()
    expect([...el.querySelectorAll('article.model')].map((c) => c.getAttribute('data-key'))).toEqual(['mine'])
  })

  it('re-checks weights on disk every 60 s and says how to start when the catalog is empty', async () => {
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval'] })
    const calls: Call[] = []
    const el = await mountWith(ModelsView, fakeApi(calls, [], { listModels: [] }))
    expect(el.textContent).toContain('The catalog is empty')
    expect(el.textContent).toContain('import one of the launcher')
    const reads = () => calls.filter((c) => c.method === 'diskStatus').length
    expect(reads()).toBe(1)
    vi.advanceTimersByTime(60_000)
    await flush()
    expect(reads()).toBe(2)
  })
})

describe('Models view: add model', () => {
  async function openAdd(over: Record<string, Answer> = {}) {
    const calls: Call[] = []
    const el = await mountWith(ModelsView, fakeApi(calls, [], over))
    button(el, 'Add model').click()
    await flush()
    const form = el.querySelector('form[aria-label="Add a model"]') as HTMLFormElement
    return { el, form, calls }
  }
  const fieldError = (form: HTMLElement, f: string) => form.querySelector(`[data-field="${f}"]`)?.textContent?.trim()

  /** The daemon's answer to addModel input: the contract's own schema, as a 400 naming each field. */
  const daemonCheck = (input: Record<string, unknown>) => {
    try {
      parseInput(contract.addModel, input)
    } catch (err) {
      throw new BackendError((err as Error).message, 'bad_input', 400)
    }
    throw new Error('the test sends only bad entries')
  }

  it("shows the contract schema's errors from the daemon's 400 beside each field", async () => {
    const { form, calls } = await openAdd({ addModel: daemonCheck })
    type(form.querySelector('#add-repo'), 'org/name; rm -rf ~')
    type(form.querySelector('#add-key'), '../etc')
    form.dispatchEvent(new Event('submit'))
    await flush()
    expect(fieldError(form, 'repo')).toContain('a model repo like org/name')
    expect(fieldError(form, 'key')).toContain('letters, digits')

    ;(form.querySelector('input[value="local"]') as HTMLInputElement).click()
    await flush()
    type(form.querySelector('#add-path'), 'models/../x')
    type(form.querySelector('#add-key'), 'ok-key')
    form.dispatchEvent(new Event('submit'))
    await flush()
    expect(fieldError(form, 'local_path')).toContain('an absolute path')
    expect(fieldError(form, 'key')).toBeUndefined()
    expect(calls.filter((c) => c.method === 'addModel')).toHaveLength(2)
  })

  it.each(['local_path: must lie inside one of /home, /data', 'local_path must lie inside one of /home, /data'])(
    "puts the daemon's 400 message beside the field it names (%s)",
    async (message) => {
      const { form, calls } = await openAdd({
        addModel: () => {
          throw new BackendError(message, 'bad_input', 400)
        },
      })
      ;(form.querySelector('input[value="local"]') as HTMLInputElement).click()
      await flush()
      type(form.querySelector('#add-path'), '/etc/models/x')
      form.dispatchEvent(new Event('submit'))
      await flush()
      expect(calls.find((c) => c.method === 'addModel')?.input).toMatchObject({ key: 'x', local_path: '/etc/models/x' })
      expect(fieldError(form, 'local_path')).toBe('must lie inside one of /home, /data')
    },
  )
})

describe('Models view: swap', () => {
  it('shows fit and validation first, and asks twice when the model does not fit', async () => {
    const calls: Call[] = []
    const subs: Sub[] = []
    const el = await mountWith(ModelsView, fakeApi(calls, subs))
    const moe = card(el, 'big-moe')
    button(moe, 'Swap…').click()
    await flush()
    const panel = moe.querySelector('section[aria-label="Swap to Big MoE"]') as HTMLElement
    expect(panel.textContent).toContain('does not fit')
    expect(panel.textContent).toContain('node1: needs 210 GB')
    expect(panel.textContent).toContain('does not rule out failures at load time')
    expect(calls.find((c) => c.method === 'validateLaunch')?.input).toEqual({ key: 'big-moe', mode: 'cluster' })

    button(panel, 'Confirm swap (cluster)').click()
    await flush()
    expect(calls.some((c) => c.method === 'startSwap')).toBe(false)
    expect(panel.querySelector('[role="alertdialog"]')?.textContent).toContain('does not fit in cluster mode')
    // The second question takes the focus, so the keyboard answers it next.
    expect(document.activeElement).toBe(button(panel, 'Swap anyway'))

    button(panel, 'Swap anyway').click()
    await flush()
    expect(calls.find((c) => c.method === 'startSwap')?.input).toEqual({
      key: 'big-moe',
      mode: 'cluster',
      confirm_no_fit: true,
    })
    expect(subs.find((s) => s.method === 'streamJob')?.input).toEqual({ id: 'swap-1' })
  })

  it('swaps a model that fits after one confirmation; a parser rejection blocks it with the message', async () => {
    const calls: Call[] = []
    const el = await mountWith(ModelsView, fakeApi(calls, []))
    const mine = card(el, 'mine')
    button(mine, 'Swap…').click()
    await flush()
    button(mine, 'Confirm swap (solo)').click()
    await flush()
    expect(calls.find((c) => c.method === 'startSwap')?.input).toEqual({
      key: 'mine',
      mode: 'solo',
      confirm_no_fit: false,
    })

    unmountAll()
    const rejected: Call[] = []
    const el2 = await mountWith(
      ModelsView,
      fakeApi(rejected, [], {
        validateLaunch: {
          ok: false,
          stage: 'parser',
          error: 'vllm serve: error: unrecognized arguments: --bogus-flag',
          cmd_args: [],
          launch_cmd: '',
          parser: 'vllm.entrypoints.openai.cli_args',
        },
      }),
    )
    const c2 = card(el2, 'mine')
    button(c2, 'Validate').click()
    await flush()
    expect(c2.textContent).toContain('unrecognized arguments: --bogus-flag')
    button(c2, 'Swap…').click()
    await flush()
    expect(button(c2, 'Confirm swap (solo)').disabled).toBe(true)
  })

  it('shows the phases live with the log tail and the ETA', async () => {
    const subs: Sub[] = []
    const el = await mountWith(ModelsView, fakeApi([], subs))
    const events = subs.find((s) => s.method === 'streamEvents')!
    const step = { key: 'big-moe', mode: 'cluster', job_id: 'swap-9', loaded: null, detail: null }
    events.onEvent(stepEvent(1, T, { ...step, phase: 'launching' }))
    await flush()
    events.onEvent(stepEvent(2, T, { ...step, phase: 'loading' }))
    const job = subs.find((s) => s.method === 'streamJob')!
    expect(job.input).toEqual({ id: 'swap-9' })
    job.onEvent({ type: 'phase', seq: 1, phase: 'loading' })
    job.onEvent({ type: 'log', seq: 2, line: 'Loading safetensors checkpoint shards: 40% Completed' })
    job.onEvent({
      type: 'progress',
      seq: 3,
      progress: { percent: null, bytes_done: null, bytes_total: null, rate: null, eta_s: 300 },
    })
    await flush()
    const box = el.querySelector('section[aria-label="Swap progress"]') as HTMLElement
    expect(box.textContent).toContain('Swapping to Big MoE')
    expect(box.querySelector('li.now')?.textContent?.trim()).toBe('Loading')
    expect([...box.querySelectorAll('li.done')].map((l) => l.textContent?.trim())).toEqual([
      'Validating',
      'Stopping the current engine',
      'Launching',
    ])
    expect(box.textContent).toContain('Loading safetensors checkpoint shards')
    expect(box.textContent).toContain('Based on its last load: about 5m left')
    // A swap's progress has no byte counts: no "— of — · —" placeholders.
    expect(box.textContent).not.toContain('—')
  })
})

describe('Models view: delete weights', () => {
  it('names the nodes and size, deletes only after Confirm, and refuses the loaded model', async () => {
    const calls: Call[] = []
    const el = await mountWith(ModelsView, fakeApi(calls, []))
    expect(button(card(el, 'qwen-a'), 'Delete weights').disabled).toBe(true)
    expect(card(el, 'qwen-a').textContent).toContain('it is the loaded model')

    const moe = card(el, 'big-moe')
    button(moe, 'Delete weights').click()
    await flush()
    expect(calls.some((c) => c.method === 'deleteWeights')).toBe(false)
    expect(moe.querySelector('[role="alertdialog"]')?.textContent).toContain(
      'Delete the weights of Big MoE from node1 and node2 (800 GB)?',
    )
    button(moe, 'Confirm').click()
    await flush()
    expect(calls.find((c) => c.method === 'deleteWeights')?.input).toEqual({ key: 'big-moe' })
    expect(moe.textContent).toContain('Deleted node1 (400 GB), node2 (400 GB)')
  })
})

describe('Models view: downloads', () => {
  it('shows progress, rate, ETA, phase and log; cancels; keeps a result card with Add to catalog after success', async () => {
    const calls: Call[] = []
    const subs: Sub[] = []
    const el = await mountWith(ModelsView, fakeApi(calls, subs))
    button(el, 'Downloads').click()
    await flush()
    type(el.querySelector('#dl-repo'), 'Qwen/Qwen3-8B')
    const target = el.querySelector('#dl-target') as HTMLSelectElement
    target.value = 'both'
    target.dispatchEvent(new Event('change'))
    ;(el.querySelector('form[aria-label="Start a download"]') as HTMLFormElement).dispatchEvent(new Event('submit'))
    await flush()
    expect(calls.find((c) => c.method === 'startDownload')?.input).toEqual({
      repo: 'Qwen/Qwen3-8B',
      target: 'both',
      mode: 'cluster',
    })
    const stream = subs.find((s) => s.method === 'streamDownload')!
    expect(stream.input).toEqual({ id: 'dl-1' })
    const push = (e: OutputOf<'streamDownload'>) => stream.onEvent(e)
    push({ type: 'phase', seq: 1, phase: 'Downloading' })
    push({ type: 'log', seq: 2, line: 'model-00001-of-00004.safetensors:  42%|████▏     | 2.10G/5.00G' })
    push({
      type: 'progress',
      seq: 3,
      progress: { percent: 42, bytes_done: 2.1 * GB, bytes_total: 5 * GB, rate: 110e6, eta_s: 27 },
    })
    await flush()
    const bar = el.querySelector('[role="progressbar"][aria-label="Download progress"]')
    expect(bar?.getAttribute('aria-valuenow')).toBe('42')
    const text = el.textContent ?? ''
    expect(text).toContain('Downloading')
    expect(text).toContain('110 MB/s')
    expect(text).toContain('about 27s left')
    expect(text).toContain('2.1 GB of 5.0 GB')
    expect(text).toContain('model-00001-of-00004.safetensors')

    button(el, 'Cancel download').click()
    await flush()
    expect(calls.find((c) => c.method === 'cancelJob')?.input).toEqual({ id: 'dl-1' })

    push({ type: 'end', seq: 4, state: 'succeeded', error: null, result: null })
    await flush()
    // The result stays on screen; the Add form opens only when asked.
    expect(el.textContent).not.toContain('Add a model from')
    const result = el.querySelector('[data-test="download-result"]') as HTMLElement
    expect(result.textContent).toContain('Qwen/Qwen3-8B')
    expect(result.textContent).toContain('node1 and node2')
    expect(result.textContent).toContain('5.0 GB')
    button(result, 'Add to catalog').click()
    await flush()
    const repo = el.querySelector('#add-repo') as HTMLInputElement | null
    expect(repo?.value).toBe('Qwen/Qwen3-8B')
    expect(el.textContent).toContain('Add a model from Qwen/Qwen3-8B')
  })

  it('offers every configured node and all of them, and the result card lists the nodes', async () => {
    const calls: Call[] = []
    const subs: Sub[] = []
    const node = (name: string) => ({
      name,
      placement_id: null,
      reachable: true,
      launcher: name === 'node1',
      ram_total_bytes: 128 * GB,
      other_bytes: 0,
    })
    const el = await mountWith(
      ModelsView,
      fakeApi(calls, subs, {
        listPlacements: { placements: [], nodes: ['node1', 'node2', 'node3'].map(node), changing: null, job: null },
        getJob: (i: Record<string, unknown>) => ({
          id: i.id,
          kind: 'download',
          title: 'Download org/x to node1, node2 and node3',
          state: 'succeeded',
          phase: 'Done',
          started_at: T,
          finished_at: T + 10_000,
          elapsed_s: 10,
          progress: { percent: 100, bytes_done: GB, bytes_total: GB, rate: null, eta_s: null },
          log: [],
          result: { repo: 'org/x', target: 'all', nodes: ['node1', 'node2', 'node3'] },
          error: null,
        }),
      }),
    )
    button(el, 'Downloads').click()
    await flush()
    const target = el.querySelector('#dl-target') as HTMLSelectElement
    expect([...target.options].map((o) => o.value)).toEqual(['node1', 'node2', 'node3', 'both', 'all'])
    type(el.querySelector('#dl-repo'), 'org/x')
    target.value = 'node3'
    target.dispatchEvent(new Event('change'))
    ;(el.querySelector('form[aria-label="Start a download"]') as HTMLFormElement).dispatchEvent(new Event('submit'))
    await flush()
    const input = calls.find((c) => c.method === 'startDownload')?.input
    expect(input).toEqual({ repo: 'org/x', target: 'node3', mode: 'solo' })
    // What the dialog sends, the contract accepts.
    expect(() => parseInput(contract.startDownload, input)).not.toThrow()
    subs
      .find((s) => s.method === 'streamDownload')!
      .onEvent({ type: 'end', seq: 1, state: 'succeeded', error: null, result: null })
    await flush()
    const result = el.querySelector('[data-test="download-result"]') as HTMLElement
    expect(result.textContent).toContain('node1, node2 and node3')
  })
})

describe('Models view: knobs', () => {
  it('shows GB for the engine and for the OS from live RAM, and saves only the knobs that are set', async () => {
    const calls: Call[] = []
    const el = await mountWith(
      ModelsView,
      fakeApi(calls, [], { setKnobs: (i: Record<string, unknown>) => ({ ...catalog[2], effective_knobs: i.knobs }) }),
    )
    const mine = card(el, 'mine')
    button(mine, 'Knobs').click()
    await flush()
    const form = mine.querySelector('form[aria-label="Knobs of My Finetune"]') as HTMLFormElement
    expect(form.textContent).toContain('about 102 GB for the engine, 25.6 GB left for the OS (of 128 GB)')
    type(form.querySelector('#util-mine'), '0.9')
    await flush()
    expect(form.textContent).toContain('about 115 GB for the engine, 12.8 GB left for the OS')

    type(form.querySelector('#maxlen-mine'), '12.5')
    form.dispatchEvent(new Event('submit'))
    await flush()
    expect(form.textContent).toContain('a whole number of tokens')
    expect(calls.some((c) => c.method === 'setKnobs')).toBe(false)

    type(form.querySelector('#maxlen-mine'), '65536')
    const fp8 = form.querySelector('#fp8-mine') as HTMLSelectElement
    fp8.value = 'on'
    fp8.dispatchEvent(new Event('change'))
    form.dispatchEvent(new Event('submit'))
    await flush()
    // Unset booleans stay unset: "off" would add a flag the bundled args never had.
    expect(calls.find((c) => c.method === 'setKnobs')?.input).toEqual({
      key: 'mine',
      knobs: { 'max-model-len': 65536, 'gpu-memory-utilization': 0.9, 'fp8-kv-cache': true },
    })
    expect(mine.textContent).toContain('Knobs saved')
  })
})

describe('Models view: recipes', () => {
  it('imports a recipe into the catalog and lists a refused one with its reason', async () => {
    const calls: Call[] = []
    const recipe = (name: string, error: string | null) => ({
      name,
      description: `vLLM serving ${name}`,
      solo: true,
      cluster: false,
      nodes_needed: 1,
      runnable: error === null,
      reason: error,
      model: error ? null : { key: name, name, repo: `org/${name}`, engine_args: [], mode: 'solo' },
      error,
    })
    const el = await mountWith(
      ModelsView,
      fakeApi(calls, [], {
        listRecipes: {
          recipes: [recipe('good-one', null), recipe('bad-one', 'engine_args.3: a shell metacharacter')],
          hint: null,
        },
        importRecipe: (i: Record<string, unknown>) =>
          model(String(i.name), { name: 'Good One', tags: ['custom', 'recipe'] }),
      }),
    )
    button(el, 'Recipes').click()
    await flush()
    const rows = [...el.querySelectorAll('#models-panel tbody tr')] as HTMLElement[]
    expect(rows[1]!.textContent).toContain('Cannot import: engine_args.3: a shell metacharacter')
    expect(buttons(rows[1]!, 'Import')).toHaveLength(0)
    button(rows[0]!, 'Import').click()
    await flush()
    expect(calls.find((c) => c.method === 'importRecipe')?.input).toEqual({ name: 'good-one' })
    expect(rows[0]!.textContent).toContain('Imported as good-one')
    expect([...card(el, 'good-one').querySelectorAll('.tag')].map((t) => t.textContent)).toEqual(['custom', 'recipe'])
  })

  it("shows each recipe's image, build args and mods; one needing more nodes cannot be imported", async () => {
    const calls: Call[] = []
    const reason = 'needs 4 nodes (tensor parallel 4 × pipeline 1 × data 1, one GPU per Spark); 2 configured here'
    const entry = (key: string, over: Record<string, unknown>) => ({
      key,
      name: key,
      repo: `org/${key}`,
      engine_args: [],
      mode: 'cluster',
      ...over,
    })
    const el = await mountWith(
      ModelsView,
      fakeApi(calls, [], {
        listRecipes: {
          recipes: [
            {
              name: 'deepseek-v4-flash',
              description: 'DeepSeek V4 Flash',
              solo: false,
              cluster: true,
              nodes_needed: 2,
              runnable: true,
              reason: null,
              model: entry('deepseek-v4-flash', {
                container: 'vllm-node-dsv4',
                build_args: ['--vllm-ref', 'nv_dev', '--rebuild-vllm'],
              }),
              error: null,
            },
            {
              name: 'glm-5-int4',
              description: 'GLM-5 INT4',
              solo: false,
              cluster: true,
              nodes_needed: 4,
              runnable: false,
              reason,
              model: entry('glm-5-int4', { container: 'vllm-node-noah-patched', mods: ['mods/gpu-mem-util-gb'] }),
              error: null,
            },
            {
              name: 'plain',
              description: 'Plain',
              solo: true,
              cluster: true,
              nodes_needed: 1,
              runnable: true,
              reason: null,
              model: entry('plain', { mode: 'both' }),
              error: null,
            },
          ],
          hint: null,
        },
      }),
    )
    button(el, 'Recipes').click()
    await flush()
    const rows = [...el.querySelectorAll('#models-panel tbody tr')] as HTMLElement[]
    expect(rows[0]!.textContent).toContain('vllm-node-dsv4')
    expect(rows[0]!.textContent).toContain('--vllm-ref nv_dev --rebuild-vllm')
    expect(button(rows[0]!, 'Import').disabled).toBe(false)
    expect(rows[1]!.textContent).toContain('vllm-node-noah-patched')
    expect(rows[1]!.textContent).toContain('mods/gpu-mem-util-gb')
    expect(rows[1]!.textContent).toContain('Needs 4 nodes — not runnable here.')
    expect(rows[1]!.textContent).toContain(reason)
    const blocked = button(rows[1]!, 'Import')
    expect(blocked.disabled).toBe(true)
    blocked.click()
    await flush()
    expect(calls.some((c) => c.method === 'importRecipe')).toBe(false)
    expect(rows[2]!.textContent).toContain('vllm-node (launcher default)')
    expect(rows[2]!.textContent).not.toContain('Build args')
    expect(rows[2]!.textContent).not.toContain('Mods')
  })
})

describe('Models view: one record of the loaded model, the swap and the download', () => {
  const swapRecord = (over: Record<string, unknown> = {}) => ({
    id: 'swap-7',
    kind: 'swap',
    title: 'Swap to Big MoE (cluster)',
    state: 'running',
    phase: 'Loading',
    started_at: Date.now() - 2000,
    finished_at: null,
    elapsed_s: 2,
    progress: null,
    log: [],
    result: null,
    error: null,
    ...over,
  })
  const midSwap = (etaS: number | null) => ({
    loaded: null,
    job: swapRecord(),
    swapping: {
      key: 'big-moe',
      mode: 'cluster',
      phase: 'loading',
      eta_s: etaS,
      layout: { mode: 'cluster', nodes: ['node1', 'node2'], tensor_parallel: 2, backend: 'ray' },
    },
  })

  it('after a reload mid-swap: the header shows the swap, every Swap button is disabled, the job is followed', async () => {
    const subs: Sub[] = []
    const el = await mountWith(ModelsView, fakeApi([], subs, { swapState: midSwap(30) }))
    const bar = el.querySelector('.loaded-bar')!.textContent ?? ''
    expect(bar).toContain('swapping')
    expect(bar).toContain('Big MoE')
    expect(bar).not.toContain('No model is loaded')
    expect(buttons(el, 'Swap…').length).toBe(3)
    expect(buttons(el, 'Swap…').every((b) => b.disabled)).toBe(true)
    expect(subs.find((s) => s.method === 'streamJob')?.input).toEqual({ id: 'swap-7' })
  })

  it('never shows a negative uptime: the header and the card agree, on the server clock', async () => {
    const subs: Sub[] = []
    // The server clock runs 17 s ahead: the model came up "in the future" by the client's clock.
    const since = Date.now() + 17_000
    const el = await mountWith(
      ModelsView,
      fakeApi([], subs, {
        swapState: { loaded: { key: 'qwen-a', served: 'org/qwen-a', mode: 'solo', since }, job: null, swapping: null },
      }),
    )
    const bar = el.querySelector('.loaded-bar')!.textContent ?? ''
    expect(bar).toContain('up 0s')
    expect(bar).not.toMatch(/up -/)
    expect(card(el, 'qwen-a').textContent).toContain('up 0s')
    // An event stamped by the server tells the offset: 40 s later on its clock, up 40 s.
    subs
      .find((s) => s.method === 'streamEvents')!
      .onEvent({
        seq: 1,
        at: since + 40_500,
        name: 'hardware.snapshot',
        data: { node1: hardwareRow('node1', T), node2: hardwareRow('node2', T), taken_at: since + 40_000 },
      })
    await flush()
    expect(el.querySelector('[data-test="uptime"]')?.textContent).toMatch(/up 4\ds/)
    expect(card(el, 'qwen-a').textContent).toMatch(/up 4\ds/)
  })

  it("counts the ETA down from the daemon's remembered load time", async () => {
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval', 'Date'] })
    const el = await mountWith(ModelsView, fakeApi([], [], { swapState: midSwap(20) }))
    const etaText = () => el.querySelector('[data-test="swap-eta"]')?.textContent ?? ''
    expect(etaText()).toContain('Based on its last load: about 20s left')
    vi.advanceTimersByTime(5000)
    await flush()
    expect(etaText()).toContain('about 15s left')
  })

  it("labels a first load's ETA an estimate from the weights' size", async () => {
    const el = await mountWith(ModelsView, fakeApi([], [], { swapState: midSwap(null) }))
    // 400 GB on disk, split over two nodes, read at 2 GB/s: about 100 s from the job's start.
    expect(el.querySelector('[data-test="swap-eta"]')?.textContent).toMatch(
      /Estimate from the weights' size: about 1m left/,
    )
  })

  it('a failed swap marks the step it failed in and shows its error once', async () => {
    const subs: Sub[] = []
    let reads = 0
    const after = { loaded: null, job: swapRecord({ state: 'failed', phase: 'Failed' }), swapping: null }
    const el = await mountWith(
      ModelsView,
      fakeApi([], subs, { swapState: () => (reads++ === 0 ? midSwap(null) : after) }),
    )
    const job = subs.find((s) => s.method === 'streamJob')!
    for (const [i, phase] of ['Validating', 'Stopping the current engine', 'Launching', 'Loading'].entries())
      job.onEvent({ type: 'phase', seq: i + 1, phase })
    const why = 'swap to Big MoE failed: the engine failed to load org/big-moe: CUDA out of memory'
    job.onEvent({ type: 'phase', seq: 5, phase: 'Failed' })
    subs
      .find((s) => s.method === 'streamEvents')!
      .onEvent(
        stepEvent(1, Date.now(), {
          key: 'big-moe',
          mode: 'cluster',
          phase: 'failed',
          job_id: 'swap-7',
          loaded: null,
          detail: why,
        }),
      )
    job.onEvent({ type: 'end', seq: 6, state: 'failed', error: why, result: null })
    await flush()
    const box = el.querySelector('section[aria-label="Swap progress"]') as HTMLElement
    expect(box.textContent).toContain('Swap failed: Big MoE')
    expect(box.querySelector('li[data-failed="true"]')?.textContent).toContain('Loading')
    expect([...box.querySelectorAll('li.done')].map((l) => l.textContent?.trim())).toEqual([
      'Validating',
      'Stopping the current engine',
      'Launching',
    ])
    expect(box.textContent!.split('CUDA out of memory').length - 1).toBe(1)
  })

  it('a finished download keeps its result card across a reload, without Add to catalog for a catalog repo', async () => {
    localStorage.clear()
    const done = {
      id: 'download-3',
      kind: 'download',
      title: 'Download org/qwen-a to node1',
      state: 'succeeded',
      phase: 'Done',
      started_at: T - 100_000,
      finished_at: T - 20_000,
      elapsed_s: 80,
      progress: { percent: 100, bytes_done: 8 * GB, bytes_total: 8 * GB, rate: null, eta_s: null },
      log: [],
      result: { repo: 'org/qwen-a', target: 'node1', nodes: ['node1'] },
      error: null,
    }
    const el = await mountWith(ModelsView, fakeApi([], [], { listJobs: [done] }))
    button(el, 'Downloads').click()
    await flush()
    const result = el.querySelector('[data-test="download-result"]') as HTMLElement
    expect(result.textContent).toContain('org/qwen-a')
    expect(result.textContent).toContain('8.0 GB')
    expect(result.textContent).toContain('1m')
    expect(result.textContent).toContain('100 MB/s')
    expect(result.textContent).toContain('already in the catalog')
    expect(buttons(result, 'Add to catalog')).toEqual([])
    button(result, 'Dismiss').click()
    await flush()
    expect(el.querySelector('[data-test="download-result"]')).toBeNull()
    unmountAll()
    const again = await mountWith(ModelsView, fakeApi([], [], { listJobs: [done] }))
    button(again, 'Downloads').click()
    await flush()
    expect(again.querySelector('[data-test="download-result"]')).toBeNull()
  })
})
