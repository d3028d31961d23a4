/**
 * The package version `x.y.z:r` (upstream version and packaging revision) as a person reads it:
 * `x.y.z (build r)`. The `:r` form stays on the wire and in manifests; this is for screens and
 * `tandem --version`. Anything not of that shape is shown as it came.
 */
export function readableVersion(version: string): string {
  const m = /^(\d+\.\d+\.\d+):(\d+)$/.exec(version)
  return m ? `${m[1]} (build ${m[2]})` : version
}
