/** What the metrics domain reads of the gateway: its request log and what each finished exchange reports. */
export type { RequestLog, RequestObserver } from './relay/requestLog'
