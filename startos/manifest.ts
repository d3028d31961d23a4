import { setupManifest } from '@start9labs/start-sdk'
import pkg from '../package.json'

/** The StartOS package id; the volume mounted at /data is `main`. */
export const PACKAGE_ID = 'tandem'
/** The port both interfaces are served on (spec 000 §1.1). */
export const TANDEM_PORT = 9999

const repository = (pkg as { repository?: string | { url?: string } }).repository
const repoUrl = (typeof repository === 'string' ? repository : (repository?.url ?? '')).replace(/^git\+/, '')

export const manifest = setupManifest({
  id: PACKAGE_ID,
  title: 'Tandem',
  license: 'LicenseRef-Tandem',
  packageRepo: repoUrl,
  upstreamRepo: repoUrl,
  marketingUrl: repoUrl,
  donationUrl: null,
  description: {
    short: 'Control plane for a two-node GPU cluster and a licensing shop',
    long:
      'Tandem drives a two-node GPU cluster over SSH (model catalog and swaps, downloads, speech ' +
      'services, deep health, Wake-on-LAN), puts llm, asr and tts behind one OpenAI-compatible host, ' +
      'and sells software licenses paid in bitcoin. Everything is served on port 9999; its data lives in /data.',
  },
  // Everything Tandem keeps (settings, SSH key pair, known hosts, licensing database) is in /data.
  volumes: ['main'],
  images: {
    main: {
      source: { dockerBuild: { dockerfile: 'Dockerfile', workdir: '.' } },
      arch: ['x86_64', 'aarch64'],
    },
  },
  alerts: {
    install:
      'After installing, run the Configure action (node hosts and users), then Show SSH key and paste the command it gives on each node.',
    update: null,
    uninstall: 'Uninstalling deletes the licensing database and its signing key. Back up first.',
    restore: null,
    start: null,
    stop: null,
  },
  dependencies: {},
})
