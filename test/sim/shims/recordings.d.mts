export declare const XET_RECORDING: string
export declare const RSYNC_RECORDING: string
export declare function xetFrames(text: string): { frame: string; written: number | null }[]
export declare function rsyncLine(
  bytes: number,
  draw: { pct: number; rate: string; time: string },
  close: { xfr: number; left: number; total: number } | null,
): string
