/** A bundled model's hub cache fixture (test/fixtures/models/hub-configs.json). */
export interface KnownModel {
  readonly provenance: string
  readonly weights_bytes: number
  readonly config: Record<string, unknown>
}
export declare const HUB_CONFIGS: string
export declare const SIM_REVISION: string
export declare function knownModel(repo: string): KnownModel | null
export declare function modelFolder(hub: string, repo: string): string
export declare function writeSnapshot(
  hub: string,
  repo: string,
  snapshot: { revision: string; config: string | Record<string, unknown>; weightsBytes: number },
): string
export declare function smallFilesBytes(configText: string): number
