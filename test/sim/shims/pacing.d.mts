/** One paced Xet redraw: its text, seconds from the start, the bytes on disk by then (or null). */
export interface PacedFrame {
  readonly text: string
  readonly at: number
  readonly written: number | null
}
/** One paced rsync redraw, for rsyncLine. */
export interface PacedDraw {
  readonly bytes: number
  readonly draw: { readonly pct: number; readonly rate: string; readonly time: string }
  readonly at: number
}
export declare function pacedRate(): number | null
export declare function tqdmBar(frac: number, width: number): string
export declare function tqdmClock(secs: number): string
export declare function drawXetBar(frame: string, n: number, total: number, rate: number): string
export declare function xetPaced(
  recording: string,
  opts: { total: number; rate: number; interval?: number },
): PacedFrame[]
export declare function rsyncRate(bytesPerSec: number): string
export declare function rsyncPaced(size: number, rate: number, interval?: number): PacedDraw[]
