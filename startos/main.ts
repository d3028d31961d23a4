import { configFile, daemonEnv } from './config'
import { TANDEM_PORT } from './manifest'
import { sdk } from './sdk'

/** The daemon in its image, with the configuration as environment; a saved form restarts it. */
export const main = sdk.setupMain(async ({ effects }) => {
  const stored = await configFile.read().const(effects)
  const mounts = sdk.Mounts.of().mountVolume({ volumeId: 'main', subpath: null, mountpoint: '/data', readonly: false })
  const subcontainer = sdk.SubContainer.of(effects, { imageId: 'main' }, mounts, 'tandem')
  return sdk.Daemons.of(effects).addDaemon('primary', {
    subcontainer,
    exec: { command: sdk.useEntrypoint(), env: daemonEnv(stored) },
    ready: {
      display: 'Web interface',
      fn: () =>
        sdk.healthCheck.checkWebUrl(effects, `http://127.0.0.1:${TANDEM_PORT}/api/health`, {
          successMessage: 'Tandem answers on port 9999',
          errorMessage: 'Tandem does not answer on port 9999',
        }),
    },
    requires: [],
  })
})
