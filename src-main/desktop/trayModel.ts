import type { PushEvent } from '../contract/events'
import type { ConnectivityView, ServiceStatus, StatusView } from '../contract/nodes'
import { nodeNames } from '../config/nodes'

/** One entry of the tray (menu bar) menu, independent of Electron so it can be tested. */
export type TrayItem =
  | { readonly kind: 'action'; readonly label: string; readonly action: 'open' | 'quit' }
  | { readonly kind: 'status'; readonly label: string }
  | { readonly kind: 'separator' }

export interface NodeLine {
  readonly node: string
  /** null: not configured. */
  readonly target: { readonly host: string; readonly user: string } | null
  readonly state: 'up' | 'down' | 'unknown' | 'not configured'
}

/** Each configured node's last known state, from the connectivity store. */
export function nodeLines(
  targets: Readonly<Record<string, { readonly host: string; readonly user: string } | null | undefined>>,
  view: Pick<ConnectivityView, 'subjects'> | null,
): NodeLine[] {
  return nodeNames({ nodes: targets }).map((node) => {
    const target = targets[node] ?? null
    if (target === null) return { node, target: null, state: 'not configured' as const }
    const subject = view !== null && Object.hasOwn(view.subjects, node) ? view.subjects[node] : undefined
    return { node, target: { host: target.host, user: target.user }, state: subject?.state ?? 'unknown' }
  })
}

const stateWord: Record<NodeLine['state'], string> = {
  up: 'up',
  down: 'down',
  unknown: 'not checked yet',
  'not configured': 'not configured',
}

type ServiceName = 'llm' | 'asr' | 'tts'
const SERVICES: readonly ServiceName[] = ['llm', 'asr', 'tts']

export interface ServiceLine {
  readonly service: ServiceName
  readonly label: ServiceStatus['label']
  /** The label as the service cards word it: "Unhealthy (deep health: wedged)". */
  readonly text: string
}

/** The configured services' labels, worded as their cards word them. */
export function serviceLines(state: Pick<TrayState, 'services'>): ServiceLine[] {
  return SERVICES.flatMap((service) => {
    const s = state.services[service]
    if (s === undefined || s.label === 'Not configured') return []
    return [{ service, label: s.label, text: s.label_reason ? `${s.label} (${s.label_reason})` : s.label }]
  })
}

/** The menu: Open dashboard, the node status summary, the services' labels, Quit. */
export function trayMenu(lines: readonly NodeLine[], services: readonly ServiceLine[] = []): TrayItem[] {
  return [
    { kind: 'action', label: 'Open dashboard', action: 'open' },
    { kind: 'separator' },
    ...lines.map((l): TrayItem => ({
      kind: 'status',
      label: `${l.node}${l.target ? ` (${l.target.user}@${l.target.host})` : ''}: ${stateWord[l.state]}`,
    })),
    ...services.map((l): TrayItem => ({ kind: 'status', label: `${l.service}: ${l.text}` })),
    { kind: 'separator' },
    { kind: 'action', label: 'Quit Tandem', action: 'quit' },
  ]
}

/** The tray's tooltip: one line a glance can read (the services only when one is not Healthy). */
export function trayTooltip(lines: readonly NodeLine[], services: readonly ServiceLine[] = []): string {
  const configured = lines.filter((l) => l.state !== 'not configured')
  if (configured.length === 0) return 'Tandem: no node configured'
  const nodes = configured.map((l) => `${l.node} ${stateWord[l.state]}`).join(', ')
  const unwell = services.filter((l) => l.label !== 'Healthy').map((l) => `${l.service} ${l.label}`)
  return `Tandem: ${nodes}${unwell.length > 0 ? `; ${unwell.join(', ')}` : ''}`
}

/** What the tray shows: the nodes' connectivity and the services' status, as the dashboard holds them. */
export interface TrayState {
  readonly connectivity: Pick<ConnectivityView, 'subjects'> | null
  readonly services: Readonly<Partial<Record<ServiceName, ServiceStatus>>>
}

/** Where the tray's state comes from: the core's event bus, and the dashboard's own first read. */
export interface TraySources {
  /** In-process subscription to every published event (EventBus.subscribe); returns the unsubscribe. */
  subscribe(fn: (ev: PushEvent) => void): () => void
  /** getConnectivity and getStatus, as the dashboard calls them (null: that read failed). */
  read(): Promise<{ connectivity: ConnectivityView | null; status: StatusView | null }>
}

/** One event applied to the tray's state, as the dashboard's cluster store applies it; null: no change. */
export function applyTrayEvent(state: TrayState, ev: PushEvent): TrayState | null {
  if (ev.name === 'service.state')
    return { ...state, services: { ...state.services, [ev.data.service]: ev.data.status } }
  if (ev.name === 'connectivity.transition') {
    const subjects = state.connectivity?.subjects ?? {}
    const next = { state: ev.data.state, last_change: ev.data.at }
    return { ...state, connectivity: { subjects: { ...subjects, [ev.data.subject]: next } } }
  }
  if (ev.name !== 'hardware.snapshot') return null
  // A node's first sighting up records no transition; the probe's snapshot says what it found.
  const subjects = { ...(state.connectivity?.subjects ?? {}) }
  let changed = false
  for (const [node, hw] of Object.entries(ev.data)) {
    if (typeof hw !== 'object' || hw.status === 'not_configured') continue
    const seen = hw.status === 'ok' ? 'up' : 'down'
    if (subjects[node]?.state === seen) continue
    subjects[node] = { state: seen, last_change: ev.data.taken_at }
    changed = true
  }
  return changed ? { ...state, connectivity: { subjects } } : null
}

/**
 * The tray's state, kept like the dashboard's: read once, then fed by the push events, never
 * polled. Events that arrive while the first read is under way are applied on top of it, so a
 * change published meanwhile is not lost.
 */
export class TrayFeed {
  private state: TrayState = { connectivity: null, services: {} }
  private pending: PushEvent[] | null = []
  private unsubscribe: (() => void) | null = null

  constructor(
    private readonly sources: TraySources,
    private readonly onChange: (state: TrayState) => void,
  ) {}

  async start(): Promise<void> {
    this.unsubscribe = this.sources.subscribe((ev) => {
      if (this.pending !== null) this.pending.push(ev)
      else this.apply(ev)
    })
    const first = await this.sources.read()
    if (this.unsubscribe === null) return
    const s = first.status
    this.state = {
      connectivity: first.connectivity,
      services: s === null ? {} : { llm: s.llm, asr: s.asr, tts: s.tts },
    }
    const missed = this.pending ?? []
    this.pending = null
    for (const ev of missed) this.state = applyTrayEvent(this.state, ev) ?? this.state
    this.onChange(this.state)
  }

  stop(): void {
    this.unsubscribe?.()
    this.unsubscribe = null
  }

  private apply(ev: PushEvent): void {
    const next = applyTrayEvent(this.state, ev)
    if (next === null) return
    this.state = next
    this.onChange(next)
  }
}
