/** Handlers of the validation log's admin methods (contract `licensingValidationsContract`). */
import type { Handlers } from '../contract/define'
import type { licensingValidationsContract } from '../contract/licensing'
import type { ValidationLog } from './validationLog'

export function validationHandlers(log: ValidationLog): Handlers<typeof licensingValidationsContract> {
  return {
    licAdminValidations: async (q) => log.list(q),
    licAdminValidationsDaily: async ({ days }) => log.daily(days),
    licAdminValidationRecording: async () => log.recording(),
  }
}
