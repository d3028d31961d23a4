import pkg from '../../package.json'

/** A package version as the specs write it: `<major>.<minor>.<patch>:<revision>` (spec 000 §9.1). */
export type PackageVersion = `${bigint}.${bigint}.${bigint}:${bigint}`

/**
 * The packaging revision of this upstream version: bumped when only the packaging changes (a new
 * image or installer of the same code), reset to 0 with each new `package.json` version.
 */
export const PACKAGE_REVISION = 0

/** Joins an upstream `x.y.z` and a revision into `x.y.z:r`, refusing anything else. */
export function packageVersion(upstream: string, revision: number): PackageVersion {
  if (!/^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)$/.test(upstream))
    throw new Error(`package version ${JSON.stringify(upstream)} is not <major>.<minor>.<patch>`)
  if (!Number.isSafeInteger(revision) || revision < 0)
    throw new Error(`package revision ${revision} is not a whole number`)
  return `${upstream}:${revision}` as PackageVersion
}

/**
 * The one version string: the dashboard, `/api/health`, `/api/config`, the StartOS manifest and
 * `tandem --version` all read it from here.
 */
export const VERSION: PackageVersion = packageVersion(pkg.version, PACKAGE_REVISION)
