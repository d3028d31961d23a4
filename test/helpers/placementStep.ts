import type { EventPayload } from '../../src-main/contract/events'

/** A placement job's step, as the job publishes it (the `step` of `placements.changed`). */
export type PlacementStepData = NonNullable<EventPayload<'placements.changed'>['step']>

/** A step of a swap on node1 from `qwen` to `coder`, with what `over` changes. */
export function placementStep(over: Partial<PlacementStepData> = {}): PlacementStepData {
  return {
    key: 'coder',
    mode: 'solo',
    phase: 'validating',
    job_id: 'swap-1',
    loaded: { key: 'qwen', served: 'org/qwen', mode: 'solo', since: 0, layout: null },
    detail: null,
    placement_id: 'node1',
    nodes: ['node1'],
    replaces: ['node1'],
    ...over,
  }
}

/** A `placements.changed` payload carrying `step`, its view empty (what the consumers of the step ignore). */
export function placementsChanged(step: PlacementStepData | null): EventPayload<'placements.changed'> {
  return { placements: [], nodes: [], changing: null, job: null, step }
}
