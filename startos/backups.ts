import { sdk } from './sdk'

/** Everything Tandem keeps is on the `main` volume (/data). */
export const { createBackup, restoreInit } = sdk.setupBackups(async () => sdk.Backups.ofVolumes('main'))
