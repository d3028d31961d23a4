import { execFileSync } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { CLUSTER_LINK_PROBE, HARDWARE_PROBE, parseHardware } from '../../../src-main/nodes/hardware'
import { clusterAddress } from '../../../src-main/nodes/probeOutput'

const FIXTURES = path.resolve(__dirname, '../../fixtures/nodes/cluster-link')
const lines = (file: string): string[] =>
  fs
    .readFileSync(path.join(FIXTURES, file), 'utf8')
    .split('\n')
    .filter((l) => l.trim() !== '')
const ib = lines('ibdev2netdev.txt')
const inetOf = (dev: string): string[] => lines(`ip-addr-${dev}.txt`)

describe('clusterAddress: the launcher’s choice of cluster interface', () => {
  it('takes an Up port with an IPv4 address, preferring a name without a capital P, without the prefix', () => {
    const inet = [...inetOf('enP2p1s0f1np1'), ...inetOf('enp1s0f1np1')]
    expect(clusterAddress(ib, inet)).toBe('192.168.177.11')
  })

  it('falls back to the first Up port with an address when every candidate has a capital P', () => {
    expect(clusterAddress(ib, inetOf('enP2p1s0f1np1'))).toBe('192.168.178.11')
  })

  it('ignores an address on a port that is Down', () => {
    const down = ['rocep1s0f1 port 1 ==> enp1s0f1np1 (Down)']
    expect(clusterAddress(down, inetOf('enp1s0f1np1'))).toBeNull()
    expect(clusterAddress(lines('ibdev2netdev-all-down.txt'), inetOf('enp1s0f1np1'))).toBeNull()
  })

  it('is null without ibdev2netdev, without an address, or on garbage', () => {
    expect(clusterAddress(undefined, undefined)).toBeNull()
    expect(clusterAddress(ib, [])).toBeNull()
    expect(clusterAddress(ib, ['5: enp1s0f1np1    inet not-an-address/24 scope global'])).toBeNull()
    expect(clusterAddress(['ibdev2netdev: command failed (Up)'], ['x'])).toBeNull()
  })

  it('is part of the one hardware probe and lands in parseHardware as cluster_ip', () => {
    expect(HARDWARE_PROBE).toContain(CLUSTER_LINK_PROBE)
    const out = ['@@hostname', 'spark-a1', '@@ibdev', ...ib, '@@clusterinet', ...inetOf('enp1s0f1np1'), '@@end'].join(
      '\n',
    )
    expect(parseHardware(out).cluster_ip).toBe('192.168.177.11')
    expect(parseHardware('@@hostname\nspark-a1\n@@end\n').cluster_ip).toBeNull()
  })
})

describe('CLUSTER_LINK_PROBE in a shell, with ibdev2netdev and ip replaying the fixtures', () => {
  let bin: string
  beforeAll(() => {
    bin = fs.mkdtempSync(path.join(os.tmpdir(), 'tandem-cluster-link-'))
    const shim = (name: string, body: string): void =>
      fs.writeFileSync(path.join(bin, name), `#!/bin/sh\n${body}\n`, { mode: 0o755 })
    shim('ibdev2netdev', `cat '${path.join(FIXTURES, 'ibdev2netdev.txt')}'`)
    // `ip -o -f inet addr show <dev>`: the device is the last argument; no file = no address.
    shim('ip', `for a; do dev=$a; done; f='${FIXTURES}/ip-addr-'"$dev"'.txt'; [ -f "$f" ] && cat "$f"; exit 0`)
  })
  afterAll(() => fs.rmSync(bin, { recursive: true, force: true }))

  const run = (pathDirs: string): string =>
    execFileSync('/bin/sh', ['-c', CLUSTER_LINK_PROBE], { env: { PATH: pathDirs }, encoding: 'utf8' })

  it('reads each Up port’s address in the same script', () => {
    const out = run(`${bin}:/usr/bin:/bin`)
    const parsed = parseHardware(`@@hostname\nspark-a1\n${out}@@end\n`)
    expect(parsed.cluster_ip).toBe('192.168.177.11')
    expect(out).toContain('enP2p1s0f1np1    inet 192.168.178.11/24')
  })

  it('prints empty sections where ibdev2netdev is missing', () => {
    const out = run('/usr/bin:/bin')
    expect(out.trim().split('\n')).toEqual(['@@ibdev', '@@clusterinet'])
    expect(parseHardware(`@@hostname\nh\n${out}@@end\n`).cluster_ip).toBeNull()
  })
})
