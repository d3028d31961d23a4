import type { Handlers } from '../contract/define'
import type { servicesContract } from '../contract/services'
import type { SpeechPatches } from './speechPatches'

/** The speech model patches: status, reapply and a plain restart of the asr container. */
export function speechPatchHandlers(
  patches: SpeechPatches,
): Pick<Handlers<typeof servicesContract>, 'getSpeechModels' | 'reapplySpeechModels' | 'restartSpeechModels'> {
  return {
    getSpeechModels: async () => patches.status(),
    reapplySpeechModels: async () => patches.reapply(),
    restartSpeechModels: async () => patches.restartOnly(),
  }
}
