import type { ConnectivityView } from '../contract/nodes'

/** One entry of the tray (menu bar) menu, independent of Electron so it can be tested. */
export type TrayItem =
  | { readonly kind: 'action'; readonly label: string; readonly action: 'open' | 'quit' }
  | { readonly kind: 'status'; readonly label: string }
  | { readonly kind: 'separator' }

export interface NodeLine {
  readonly node: 'node1' | 'node2'
  /** null: not configured. */
  readonly target: { readonly host: string; readonly user: string } | null
  readonly state: 'up' | 'down' | 'unknown' | 'not configured'
}

/** Each node's last known state, from the connectivity store. */
export function nodeLines(
  targets: Readonly<Record<'node1' | 'node2', { readonly host: string; readonly user: string } | null>>,
  view: ConnectivityView | null,
): NodeLine[] {
  return (['node1', 'node2'] as const).map((node) => {
    const target = targets[node]
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

/** The menu: Open dashboard, the node status summary, Quit. */
export function trayMenu(lines: readonly NodeLine[]): TrayItem[] {
  return [
    { kind: 'action', label: 'Open dashboard', action: 'open' },
    { kind: 'separator' },
    ...lines.map((l): TrayItem => ({
      kind: 'status',
      label: `${l.node}${l.target ? ` (${l.target.user}@${l.target.host})` : ''}: ${stateWord[l.state]}`,
    })),
    { kind: 'separator' },
    { kind: 'action', label: 'Quit Tandem', action: 'quit' },
  ]
}

/** The tray's tooltip: one line a glance can read. */
export function trayTooltip(lines: readonly NodeLine[]): string {
  const configured = lines.filter((l) => l.state !== 'not configured')
  if (configured.length === 0) return 'Tandem: no node configured'
  return `Tandem: ${configured.map((l) => `${l.node} ${stateWord[l.state]}`).join(', ')}`
}
