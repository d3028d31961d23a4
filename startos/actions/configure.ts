import { configFile, configSpec } from '../config'
import { sdk } from '../sdk'

/** Spec 000 §2.1: the settings reach the daemon as environment; saving restarts it with them. */
export const configure = sdk.Action.withInput(
  'configure',
  {
    name: 'Configure',
    description: 'Node hosts and users, where asr and tts run, the llm port, the chat UI link and the registry key',
    warning: null,
    allowedStatuses: 'any',
    group: null,
    visibility: 'enabled',
  },
  configSpec,
  async () => (await configFile.read().once()) ?? undefined,
  async ({ effects, input }) => {
    await configFile.write(effects, input)
  },
)
